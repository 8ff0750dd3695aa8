/**
 * The pool engine: every read and write of the `matching` schema, as plain SQL on
 * postgres.js. Over-allocation is settled by Postgres alone: each change of a payout is
 * one guarded update (`free_amount = free_amount - x where free_amount >= x`), the row
 * lock orders concurrent changes of one payout, and the check constraints refuse any
 * state whose parts do not add up to the amount.
 *
 * Lock order: admission and release of one payin first upsert that payin's
 * `payin_generations` row (its lock orders them per payin); an admission then locks one
 * payout row and inserts a new slot; release and confirm lock the slot first and the
 * payout second. No statement locks a slot after a payout, so the paths cannot deadlock
 * on each other.
 */
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import { isSerializationFailure, isUniqueViolation } from "@gw/db";
import { PoolPayoutEventSchema } from "@gw/proto/gateway/matching/v1/matching_pb";
import type postgres from "postgres";
import { type Interval, toCents } from "./policy.ts";

/** The pool or a transaction of it. */
type Q = Sql | postgres.TransactionSql;

/** RFC 3339 UTC with milliseconds, made by Postgres so no driver conversion is involved. */
const rfc3339 = (sql: Q, column: string) =>
  sql.unsafe(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

export interface DestinationRow {
  number: string;
  name: string;
  bankname: string | null;
}

export interface PayoutRow extends DestinationRow {
  operation_id: string;
  shop_id: string;
  method: string;
  currency: string;
  amount: string;
  free_amount: string;
  reserved_amount: string;
  paid_amount: string;
  handed_off_amount: string;
  status: "open" | "completed" | "handed_off";
  window_ends_at: string;
  created_at: string;
  closed_at: string | null;
}

export interface SlotRow extends DestinationRow {
  payin_id: string;
  payout_id: string;
  amount: string;
  status: "reserved" | "confirmed" | "released";
  release_reason: string | null;
  expires_at: string;
  method: string;
  currency: string;
}

export interface ContributionRow {
  id: string;
  payin_id: string;
  amount: string;
  completed_at: string;
}

export type ReleaseReason = "expired" | "rejected" | "cancelled";

/** A payout with its contributions, ordered by completion time then id. */
export interface PayoutWithContributions {
  payout: PayoutRow;
  contributions: ContributionRow[];
}

export interface AddPayoutInput extends DestinationRow {
  operationId: string;
  shopId: string;
  method: string;
  currency: string;
  amount: string;
  windowEndsAt: string;
}

export interface AdmitInput {
  payinId: string;
  shopId: string;
  method: string;
  currency: string;
  amount: string;
  /** The method's minimum amount, as decimal text. */
  minimum: string;
  slotLifetimeMs: number;
  /** The routing attempt asking (the operation's version then); 0: none. */
  generation: number;
}

/** Why a write did not happen; the service maps these to public error codes. */
export type PoolRefusal =
  | { refused: "idempotency_conflict"; payout: PayoutRow }
  | { refused: "amount_unavailable" }
  | { refused: "not_found" }
  | { refused: "released" }
  | { refused: "slot_settled"; slot: SlotRow };

export interface ConfirmResult {
  slot: SlotRow;
  contribution: ContributionRow;
  payout: PayoutRow;
  contributions: ContributionRow[];
  payoutCompleted: boolean;
}

export interface ScanResult {
  /** Free remainders of the examined payouts that still admit (window open). */
  frees: bigint[];
  /** Whether a scan side found more rows than its limit. */
  truncated: boolean;
  evaluatedAt: string;
}

/** Attempts at a statement that Postgres aborted for a deadlock; each is one statement. */
const DEADLOCK_ATTEMPTS = 5;

async function retryDeadlocks<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= DEADLOCK_ATTEMPTS || !isSerializationFailure(err)) throw err;
    }
  }
}

/**
 * The admission statement, as text with positional parameters so the benchmark's pgbench
 * baseline runs exactly the same SQL: $1 method, $2 currency, $3 amount, $4 the method's
 * minimum, $5 payin id, $6 shop id, $7 slot lifetime in ms, $8 the routing generation. It
 * first records the generation for the payin (`gate`), unless a release at or above it
 * was recorded (0 passes always): the upsert locks the payin's row and reads its newest
 * committed version, so a release committed meanwhile is seen, and a release arriving
 * meanwhile waits for this statement's commit and then finds its slot. It then picks one
 * payout by the admission policy and locks it, takes the amount off its free remainder
 * under the same guards, and inserts the slot; it answers the slot with the payout's
 * destination, or no row when the gate refused or nothing could take the amount.
 */
export function admissionSql(skipLocked: boolean): string {
  const ts = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  return `
    with gate as (
      insert into matching.payin_generations as g (payin_id, admitted) values ($5::uuid, $8::bigint)
      on conflict (payin_id) do update
      set admitted = greatest(g.admitted, excluded.admitted), updated_at = now()
      where excluded.admitted = 0 or g.released < excluded.admitted
      returning g.payin_id
    ), pick as (
      select operation_id from matching.pool_payouts
      where exists (select 1 from gate)
        and method = $1::text and currency = $2::text and status = 'open'
        and free_amount >= $3::numeric
        and (free_amount = $3::numeric
          or ($3::numeric >= $4::numeric and free_amount >= $3::numeric + $4::numeric))
        and window_ends_at > now()
        and not exists (select 1 from matching.slots where payin_id = $5::uuid)
      order by free_amount, created_at, operation_id
      limit 1
      ${skipLocked ? "for update skip locked" : "for update"}
    ), taken as (
      update matching.pool_payouts p
      set free_amount = p.free_amount - $3::numeric,
          reserved_amount = p.reserved_amount + $3::numeric,
          version = p.version + 1
      from pick
      where p.operation_id = pick.operation_id
        and p.free_amount >= $3::numeric
        and (p.free_amount = $3::numeric or p.free_amount >= $3::numeric + $4::numeric)
      returning p.operation_id, p.number, p.name, p.bankname, p.method, p.currency
    ), s as (
      insert into matching.slots (payin_id, payout_id, shop_id, amount, status, expires_at, generation)
      select $5::uuid, operation_id, $6::uuid, $3::numeric, 'reserved', now() + $7::int * interval '1 millisecond',
        $8::bigint
      from taken
      returning payin_id, payout_id, amount, status, release_reason, expires_at
    )
    select s.payin_id, s.payout_id, s.amount::text as amount, s.status, s.release_reason,
      ${ts("s.expires_at")} as expires_at, p.number, p.name, p.bankname, p.method, p.currency
    from s join taken p on p.operation_id = s.payout_id`;
}

export class PoolStore {
  readonly #sql: Sql;
  readonly #eventsPrefix: string;

  constructor(sql: Sql, eventsPrefix: string) {
    this.#sql = sql;
    this.#eventsPrefix = eventsPrefix;
  }

  #payoutColumns(sql: Q, alias = "") {
    const p = alias === "" ? "" : `${alias}.`;
    return sql.unsafe(
      `${p}operation_id, ${p}shop_id, ${p}method, ${p}currency, ${p}amount::text as amount,
       ${p}free_amount::text as free_amount, ${p}reserved_amount::text as reserved_amount,
       ${p}paid_amount::text as paid_amount, ${p}handed_off_amount::text as handed_off_amount,
       ${p}status, ${p}number, ${p}name, ${p}bankname,
       to_char(${p}window_ends_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as window_ends_at,
       to_char(${p}created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
       to_char(${p}closed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as closed_at`,
    );
  }

  #slotColumns(sql: Q) {
    return sql.unsafe(
      `s.payin_id, s.payout_id, s.amount::text as amount, s.status, s.release_reason,
       to_char(s.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as expires_at,
       p.number, p.name, p.bankname, p.method, p.currency`,
    );
  }

  /** Open payouts of a method and currency and their summed free remainder. */
  async depth(method: string, currency: string): Promise<{ payouts: number; free: string }> {
    const [row] = await this.#sql<{ payouts: number; free: string }[]>`
      select count(*)::int as payouts, coalesce(sum(free_amount), 0)::text as free
      from matching.pool_payouts
      where method = ${method} and currency = ${currency} and status = 'open'`;
    return row ?? { payouts: 0, free: "0" };
  }

  /**
   * Puts a payout into the pool, or answers the one already there. A stored payout with
   * another method, currency, amount or shop is an idempotency conflict.
   */
  async addPayout(input: AddPayoutInput): Promise<{ payout: PayoutRow; created: boolean } | PoolRefusal> {
    const sql = this.#sql;
    const [inserted] = await sql<PayoutRow[]>`
      insert into matching.pool_payouts
        (operation_id, shop_id, method, currency, amount, free_amount, number, name, bankname, window_ends_at)
      values (${input.operationId}, ${input.shopId}, ${input.method}, ${input.currency},
        ${input.amount}::numeric, ${input.amount}::numeric, ${input.number}, ${input.name},
        ${input.bankname}, ${input.windowEndsAt}::timestamptz)
      on conflict (operation_id) do nothing
      returning ${this.#payoutColumns(sql)}`;
    if (inserted) return { payout: inserted, created: true };
    const existing = await this.payout(input.operationId);
    if (existing === undefined) throw new Error("pool payout vanished after a conflicting insert");
    const same =
      existing.shop_id === input.shopId &&
      existing.method === input.method &&
      existing.currency === input.currency &&
      toCents(existing.amount) === toCents(input.amount);
    return same
      ? { payout: existing, created: false }
      : { refused: "idempotency_conflict", payout: existing };
  }

  async payout(operationId: string): Promise<PayoutRow | undefined> {
    const sql = this.#sql;
    const [row] = await sql<PayoutRow[]>`
      select ${this.#payoutColumns(sql)} from matching.pool_payouts where operation_id = ${operationId}`;
    return row;
  }

  async contributions(payoutId: string, sql: Q = this.#sql): Promise<ContributionRow[]> {
    return sql<ContributionRow[]>`
      select id, payin_id, amount::text as amount, ${rfc3339(sql, "completed_at")} as completed_at
      from matching.contributions where payout_id = ${payoutId}
      order by completed_at, id`;
  }

  async slot(payinId: string, sql: Q = this.#sql): Promise<SlotRow | undefined> {
    const [row] = await sql<SlotRow[]>`
      select ${this.#slotColumns(sql)}
      from matching.slots s join matching.pool_payouts p on p.operation_id = s.payout_id
      where s.payin_id = ${payinId}`;
    return row;
  }

  /**
   * Admits a payin into one payout, in one statement: pick the payout by the admission
   * policy, take the amount off its free remainder under the guards, insert the slot.
   *
   * The policy is one ordering, `free_amount, created_at, operation_id`, over the payouts
   * that can take the amount: their free remainder equals it (the slot closes the payout
   * exactly) or is at least the amount plus the minimum (the remainder stays admissible).
   * An exact close has the smallest such remainder, so it always wins; otherwise the
   * payout left with the smallest remainder wins (best fit), the oldest on ties.
   *
   * The first try skips payouts another admission holds locked, so concurrent payins
   * spread over the fitting payouts instead of queueing on one. When it finds nothing
   * (every fitting payout locked, or none), the second try waits for the locks: Postgres
   * re-checks the guards on the newest row version after the wait, so a payout that a
   * concurrent slot made unfit is passed over, and one that still fits is taken. Only
   * when that finds nothing is the amount unavailable.
   *
   * In the same statement, first (see `admissionSql`): a release of the payin at the
   * request's generation or newer (its attempt was withdrawn, maybe before this Admit
   * arrived) refuses it. A slot the payin already holds (reserved or confirmed) is
   * answered; a released one was left by an earlier routing (a refused create, now
   * retried), so it is forgotten and the payin admitted afresh.
   */
  async admit(input: AdmitInput): Promise<{ slot: SlotRow; created: boolean } | PoolRefusal> {
    for (let afresh = false; ; afresh = true) {
      for (const skipLocked of [true, false]) {
        let admitted: SlotRow | undefined;
        try {
          admitted = await retryDeadlocks(() => this.#admitOnce(input, skipLocked));
        } catch (err) {
          // A concurrent admission of the same payin inserted its slot first; the whole
          // statement (and its update of the payout) rolled back. Answer that slot.
          if (!isUniqueViolation(err)) throw err;
          admitted = undefined;
        }
        if (admitted) return { slot: admitted, created: true };
      }
      // Nothing admitted: a release refused it, the payin already has its slot (a retry,
      // or a concurrent twin), or no payout can take the amount.
      if (input.generation > 0) {
        const [gen] = await this.#sql<{ released: string }[]>`
          select released::text as released from matching.payin_generations where payin_id = ${input.payinId}`;
        if (gen !== undefined && BigInt(gen.released) >= BigInt(input.generation))
          return { refused: "released" };
      }
      const existing = await this.slot(input.payinId);
      if (existing?.status === "released" && !afresh) {
        await this.#sql`delete from matching.slots where payin_id = ${input.payinId} and status = 'released'`;
        continue;
      }
      return existing ? { slot: existing, created: false } : { refused: "amount_unavailable" };
    }
  }

  async #admitOnce(input: AdmitInput, skipLocked: boolean): Promise<SlotRow | undefined> {
    const [row] = await this.#sql.unsafe<SlotRow[]>(
      admissionSql(skipLocked),
      [
        input.method,
        input.currency,
        input.amount,
        input.minimum,
        input.payinId,
        input.shopId,
        input.slotLifetimeMs,
        input.generation,
      ],
      { prepare: true },
    );
    return row;
  }

  /**
   * Frees a reserved slot: its amount returns to the payout's free remainder in the same
   * statement. Releasing a released slot answers it unchanged; a confirmed one is settled.
   * The release is first remembered with its generation in the payin's
   * `payin_generations` row, whether or not a slot exists, so a later Admit of that
   * generation or older reserves nothing; an admission in flight holds that row, so the
   * release waits for it and then finds its slot. A slot a newer generation admitted is
   * left reserved (answered unchanged).
   */
  async release(
    payinId: string,
    reason: ReleaseReason,
    generation: number,
  ): Promise<{ slot: SlotRow } | PoolRefusal> {
    return retryDeadlocks(() => this.#sql.begin((tx) => this.#release(tx, payinId, reason, generation)));
  }

  async #release(tx: Q, payinId: string, reason: ReleaseReason, generation: number) {
    await tx`
      insert into matching.payin_generations as g (payin_id, released) values (${payinId}, ${generation})
      on conflict (payin_id) do update
      set released = greatest(g.released, excluded.released), updated_at = now()`;
    const [row] = await tx<{ payin_id: string }[]>`
        with s as (
          update matching.slots set status = 'released', release_reason = ${reason}, settled_at = now()
          where payin_id = ${payinId} and status = 'reserved'
            and (${generation}::bigint = 0 or generation <= ${generation}::bigint)
          returning payin_id, payout_id, amount
        ), p as (
          update matching.pool_payouts p
          set free_amount = p.free_amount + s.amount, reserved_amount = p.reserved_amount - s.amount,
              version = p.version + 1
          from s where p.operation_id = s.payout_id
          returning p.operation_id
        )
        select s.payin_id from s join p on p.operation_id = s.payout_id`;
    const slot = await this.slot(payinId, tx);
    if (slot === undefined) return { refused: "not_found" } as const;
    if (row === undefined && slot.status === "confirmed") return { refused: "slot_settled", slot } as const;
    return { slot };
  }

  /**
   * Completes a reserved slot with the payin's actual amount: the slot's reservation
   * becomes a contribution of that amount, and a difference to the slot amount goes back
   * to (or is taken from) the free remainder under the non-negative guard. The payout
   * completes when its contributions reach its amount; its completion event is queued in
   * the same transaction. A repeat with the same actual amount answers the same result.
   */
  async confirm(payinId: string, actualAmount: string): Promise<ConfirmResult | PoolRefusal> {
    return retryDeadlocks(() =>
      this.#sql.begin(async (tx) => {
        const [locked] = await tx<{ status: string; payout_id: string; amount: string }[]>`
          select status, payout_id, amount::text as amount from matching.slots
          where payin_id = ${payinId} for update`;
        if (locked === undefined) return { refused: "not_found" } as const;
        if (locked.status === "confirmed") return this.#confirmedResult(tx, payinId, actualAmount);
        if (locked.status === "released") {
          const slot = await this.slot(payinId, tx);
          if (slot === undefined) throw new Error("slot vanished under its lock");
          return { refused: "slot_settled", slot } as const;
        }
        const [payout] = await tx<PayoutRow[]>`
          update matching.pool_payouts p
          set reserved_amount = p.reserved_amount - ${locked.amount}::numeric,
              paid_amount = p.paid_amount + ${actualAmount}::numeric,
              free_amount = p.free_amount + ${locked.amount}::numeric - ${actualAmount}::numeric,
              status = case when p.paid_amount + ${actualAmount}::numeric = p.amount then 'completed' else p.status end,
              closed_at = case when p.paid_amount + ${actualAmount}::numeric = p.amount then now() else p.closed_at end,
              version = p.version + 1
          where p.operation_id = ${locked.payout_id}
            and p.free_amount + ${locked.amount}::numeric - ${actualAmount}::numeric >= 0
          returning ${this.#payoutColumns(tx, "p")}`;
        if (payout === undefined) return { refused: "amount_unavailable" } as const;
        await tx`
          update matching.slots set status = 'confirmed', settled_at = now() where payin_id = ${payinId}`;
        await tx`
          insert into matching.contributions (payout_id, payin_id, amount)
          values (${locked.payout_id}, ${payinId}, ${actualAmount}::numeric)`;
        const result = await this.#confirmedResult(tx, payinId, actualAmount);
        if (!("refused" in result) && result.payoutCompleted) {
          await this.#enqueuePayoutEvent(tx, "pool_payout.completed", {
            payout: result.payout,
            contributions: result.contributions,
          });
        }
        return result;
      }),
    );
  }

  async #confirmedResult(tx: Q, payinId: string, actualAmount: string): Promise<ConfirmResult | PoolRefusal> {
    const slot = await this.slot(payinId, tx);
    if (slot === undefined) throw new Error("confirmed slot without a row");
    const [contribution] = await tx<ContributionRow[]>`
      select id, payin_id, amount::text as amount, ${rfc3339(tx, "completed_at")} as completed_at
      from matching.contributions where payin_id = ${payinId}`;
    if (contribution === undefined) throw new Error("confirmed slot without a contribution");
    if (toCents(contribution.amount) !== toCents(actualAmount)) return { refused: "slot_settled", slot };
    const [payout] = await tx<PayoutRow[]>`
      select ${this.#payoutColumns(tx)} from matching.pool_payouts where operation_id = ${slot.payout_id}`;
    if (payout === undefined) throw new Error("slot without its payout");
    const payoutCompleted = payout.status === "completed";
    const contributions = payoutCompleted ? await this.contributions(payout.operation_id, tx) : [];
    return { slot, contribution, payout, contributions, payoutCompleted };
  }

  /**
   * Closes payouts whose window ended and that hold no reserved slot (a reserved slot
   * may still be paid, so its payout waits until the slot is confirmed or released: a
   * slot ends only with its payment, which operations reports by ConfirmSlot or
   * ReleaseSlot; its `expires_at` is the payment's window, never a release of its own). The free remainder moves to `handed_off_amount`, the payout becomes
   * `handed_off`, and a `pool_payout.handed_off` event with its contributions is queued
   * in the same transaction: operations sends the remainder to the next provider of the
   * payout route.
   */
  async closeEndedWindows(limit: number): Promise<PayoutWithContributions[]> {
    return retryDeadlocks(() =>
      this.#sql.begin(async (tx) => {
        const closed = await tx<PayoutRow[]>`
          with due as (
            select operation_id from matching.pool_payouts
            where status = 'open' and window_ends_at <= now() and reserved_amount = 0
            order by window_ends_at
            limit ${limit}
            for update skip locked
          )
          update matching.pool_payouts p
          set handed_off_amount = p.free_amount, free_amount = 0, status = 'handed_off',
              closed_at = now(), version = p.version + 1
          from due where p.operation_id = due.operation_id and p.reserved_amount = 0
          returning ${this.#payoutColumns(tx, "p")}`;
        const out: PayoutWithContributions[] = [];
        for (const payout of closed) {
          const item = { payout, contributions: await this.contributions(payout.operation_id, tx) };
          await this.#enqueuePayoutEvent(tx, "pool_payout.handed_off", item);
          out.push(item);
        }
        return out;
      }),
    );
  }

  async #enqueuePayoutEvent(tx: Q, type: string, item: PayoutWithContributions): Promise<void> {
    const id = randomUUID();
    const payload = toBinary(
      PoolPayoutEventSchema,
      create(PoolPayoutEventSchema, {
        eventId: id,
        type,
        occurredAt: new Date().toISOString(),
        payout: toPoolPayoutMessage(item.payout, item.contributions),
      }),
    );
    await tx`
      insert into matching.outbox (id, subject, payload)
      values (${id}, ${`${this.#eventsPrefix}.matching.${type}`}, ${Buffer.from(payload)})`;
    await tx`select pg_notify('outbox_matching', '')`;
  }

  /**
   * The rows an availability read examines: open payouts of the method and currency in
   * matching order from `from` on, at most `limit` plus one to detect truncation. The
   * limit applies before any filtering, as the spec says. The rows come back as one
   * comma-separated list in scan order (an empty entry for a payout whose window ended),
   * which costs the driver one string instead of a thousand rows.
   */
  scanUp(method: string, currency: string, from: string, limit: number) {
    const sql = this.#sql;
    return sql<ScanLists[]>`
      select ${rfc3339(sql, "now()")} as at, null as down, (
        select string_agg(case when window_ends_at > now() then free_amount::text else '' end, ','
          order by free_amount, created_at, operation_id)
        from (
          select free_amount, window_ends_at, created_at, operation_id from matching.pool_payouts
          where method = ${method} and currency = ${currency} and status = 'open'
            and free_amount >= ${from}::numeric
          order by free_amount, created_at, operation_id
          limit ${limit + 1}
        ) scan
      ) as up`;
  }

  /**
   * The rows a recommendations read examines, in one statement (one snapshot): up to
   * `limit` plus one payouts on each side of `at` by free remainder, the nearest first.
   */
  scanBothSides(method: string, currency: string, at: string, limit: number) {
    const sql = this.#sql;
    return sql<ScanLists[]>`
      select ${rfc3339(sql, "now()")} as at, (
        select string_agg(case when window_ends_at > now() then free_amount::text else '' end, ','
          order by free_amount desc, created_at desc, operation_id desc)
        from (
          select free_amount, window_ends_at, created_at, operation_id from matching.pool_payouts
          where method = ${method} and currency = ${currency} and status = 'open'
            and free_amount < ${at}::numeric
          order by free_amount desc, created_at desc, operation_id desc
          limit ${limit + 1}
        ) scan
      ) as down, (
        select string_agg(case when window_ends_at > now() then free_amount::text else '' end, ','
          order by free_amount, created_at, operation_id)
        from (
          select free_amount, window_ends_at, created_at, operation_id from matching.pool_payouts
          where method = ${method} and currency = ${currency} and status = 'open'
            and free_amount >= ${at}::numeric
          order by free_amount, created_at, operation_id
          limit ${limit + 1}
        ) scan
      ) as up`;
  }
}

/** A scan's answer: the snapshot time and each side's rows in scan order (null: none). */
export interface ScanLists {
  at: string;
  down: string | null;
  up: string | null;
}

/**
 * Drops the extra row of each side, tells whether any side had one, and keeps the free
 * remainders of the payouts that still admit.
 */
export function trimScan(rows: readonly ScanLists[], limit: number, fallbackAt: string): ScanResult {
  const [row] = rows;
  let truncated = false;
  const frees: bigint[] = [];
  for (const list of [row?.down, row?.up]) {
    if (list === null || list === undefined) continue;
    const entries = list.split(",");
    if (entries.length > limit) truncated = true;
    for (const entry of entries.slice(0, limit)) if (entry !== "") frees.push(toCents(entry));
  }
  return { frees, truncated, evaluatedAt: row?.at ?? fallbackAt };
}

export type { Interval };

/** The protobuf PoolPayout of a row. */
export function toPoolPayoutMessage(row: PayoutRow, contributions: ContributionRow[] = []) {
  return {
    operationId: row.operation_id,
    shopId: row.shop_id,
    method: row.method,
    currency: row.currency,
    amount: row.amount,
    freeAmount: row.free_amount,
    reservedAmount: row.reserved_amount,
    paidAmount: row.paid_amount,
    handedOffAmount: row.handed_off_amount,
    status: row.status,
    windowEndsAt: row.window_ends_at,
    destination: {
      number: row.number,
      name: row.name,
      ...(row.bankname === null ? {} : { bankname: row.bankname }),
    },
    contributions: contributions.map((c) => ({
      id: c.id,
      payinId: c.payin_id,
      amount: c.amount,
      completedAt: c.completed_at,
    })),
    createdAt: row.created_at,
    ...(row.closed_at === null ? {} : { closedAt: row.closed_at }),
  };
}
