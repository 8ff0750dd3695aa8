import { randomUUID } from "node:crypto";
import type { Sql } from "@gw/db";
import { eventHeaders } from "@gw/events";
import { Decimal } from "@gw/money";
import type { ReceiptItem } from "@gw/proto/gateway/operations/v1/operations_pb";
import type postgres from "postgres";
import { type EventStatements, operationEvent } from "../domain/events.ts";
import {
  type Applied,
  apply,
  applyWithoutLegs,
  type Change,
  type Fact,
  type LifecyclePatch,
  stateOf,
} from "../domain/lifecycle/apply.ts";
import {
  type DomainError,
  isDomainError,
  LegsDisagreeError,
  LifecycleViolationError,
} from "../domain/lifecycle/errors.ts";
import { allowsState } from "../domain/lifecycle/table.ts";
import type { LegRow, OperationRow, ReconcileRow } from "../domain/model.ts";
import { builtInProvider, type ProviderConfig } from "../domain/providers.ts";
import { receiptsOf } from "../domain/receipts-of.ts";
import { AuditRepository } from "./audit.ts";
import { HandOffRepository } from "./handoffs.ts";
import { LinkRepository } from "./links.ts";
import { OperatorQueueRepository } from "./operator-queue.ts";
import { ProviderFactRepository } from "./provider-facts.ts";
import { ShopPageRepository } from "./shop-pages.ts";
import { WithdrawalRepository } from "./withdrawals.ts";

export type { LegRow, ReconcileRow };

type Tx = Sql | postgres.TransactionSql;

/** A change that adds no legs and checks none (not a completion): one statement writes it whole. */
const writesOnlyTheRow = (change: Change) => change.legs.length === 0 && change.to !== "completed";

/**
 * drizzle, attached to the same postgres.js client, makes it pass timestamps through as
 * text (see libs/db connect.ts): rows are read with timestamp strings and written with
 * ISO strings. These two functions are the only place that knows.
 */
const TIMESTAMPS = [
  "created_at",
  "updated_at",
  "expires_at",
  "review_started_at",
  "routing_deadline",
  "next_check_at",
  "stuck_alerted_at",
] as const;
function hydrate<T extends OperationRow | undefined>(row: T): T {
  if (!row) return row;
  const r = row as unknown as Record<string, unknown>;
  for (const key of TIMESTAMPS) if (typeof r[key] === "string") r[key] = new Date(r[key] as string);
  return row;
}
function toDriver(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

export interface Route {
  payin: string[];
  payout: string[];
  settlementCurrency: string;
}

/** A route with the configs of its providers for one direction, in route order. */
export interface RouteWithProviders {
  route: Route;
  providers: (ProviderConfig | undefined)[];
  names: string[];
  /** The routing configuration's version it was read at (`operations.config_version`; null: no row). */
  configVersion: string | null;
}

/** What a create's claim (`OperationStore.claim`) writes: the row in `routing` but its deadline. */
export type ClaimRow = Pick<
  OperationRow,
  | "id"
  | "shop_id"
  | "merchant_id"
  | "merchant_operation_id"
  | "request_hash"
  | "type"
  | "method"
  | "currency"
  | "expected_amount"
  | "client_id"
  | "client_ip"
  | "number"
  | "name"
  | "bankname"
  | "settlement_currency"
  | "fx_rate"
  | "fx_source"
  | "commission_percent"
  | "commission_fixed"
  | "pricing_version"
>;

/** A route's columns as `routeWithProviders` and `createContext` select them. */
interface RouteColumns {
  route_payin: string[];
  route_payout: string[];
  route_settlement_currency: string;
  route_providers: ProviderConfig[] | null;
  route_config_version: string | null;
}

/**
 * The configs of the providers route `r` names for `direction`, as `route_providers`, and
 * the configuration's version in the same snapshot, as `route_config_version`.
 */
const providersOf = (sql: Sql, direction: "payin" | "payout") => sql`
  (select json_agg(json_build_object('name', p.name, 'kind', p.kind, 'baseUrl', p.base_url,
           'credentials', p.credentials, 'methods', p.methods))
     from operations.providers p
    where p.name = any(case when ${direction} = 'payin' then r.payin else r.payout end)) as route_providers,
  (select v.version::text from operations.config_version v) as route_config_version`;

function routeOf(row: RouteColumns, direction: "payin" | "payout"): RouteWithProviders {
  const names = direction === "payin" ? row.route_payin : row.route_payout;
  const byName = new Map((row.route_providers ?? []).map((p) => [p.name, p]));
  return {
    route: {
      payin: row.route_payin,
      payout: row.route_payout,
      settlementCurrency: row.route_settlement_currency,
    },
    providers: names.map((n) => byName.get(n) ?? builtInProvider(n)),
    names,
    configVersion: row.route_config_version,
  };
}

/** Columns a transition may change. */
export type OperationPatch = Partial<
  Omit<
    OperationRow,
    "id" | "shop_id" | "merchant_id" | "merchant_operation_id" | "version" | "created_at" | "updated_at"
  >
>;

/**
 * Columns a caller may write with a fact (`applyFact`'s `data`): never the lifecycle's
 * own (status, provider, amounts, cancel and review columns), which only the fact sets.
 */
export type DataPatch = Omit<OperationPatch, keyof LifecyclePatch>;

/** Statuses the reconciler looks at: the create did not finish, or the provider has not answered. */
export const UNSETTLED = ["routing", "pending", "awaiting_confirmation"] as const;
/** Every non-terminal status; an operation in one of them too long is reported as stuck. */
export const NON_TERMINAL = [...UNSETTLED, "manual_check"] as const;

/** `ms` milliseconds as a Postgres interval, so every time comparison uses the database clock. */
const millis = (sql: Sql, ms: number) => sql`make_interval(secs => ${ms}::double precision / 1000)`;

/**
 * Refuses a write that moves the row along no transition of the lifecycle table (from
 * `completed`, `rejected` or `cancelled` nothing does), or that emits where the table
 * says it does not, or not where it does: whichever file asks, the status changes only
 * as the table allows.
 */
function assertTransition(before: OperationRow, patch: OperationPatch, emit: boolean): void {
  const from = stateOf(before);
  const to = stateOf({ ...before, ...patch });
  if (!allowsState(from, to, emit))
    throw new LifecycleViolationError(before.id, from, emit ? to : `${to} (without its event)`);
}

/**
 * Every read and write of the operations schema. State changes go through
 * `transition()`: one statement that updates the row only if its version is still the
 * one read (optimistic concurrency), and queues the event for the new state in the same
 * statement, so a change and its event can never be split and no change is lost to a
 * concurrent writer.
 */
export class OperationStore {
  readonly #sql: Sql;
  readonly #prefix: string;
  /** `operations.withdrawals`: the withdrawals of cancelled payments. */
  readonly withdrawals: WithdrawalRepository;
  /** `operations.pool_handoffs`: the hand-offs of pool payouts' remainders. */
  readonly handoffs: HandOffRepository;
  /** `operations.flexible_links`: flexible payment links. */
  readonly links: LinkRepository;
  /** `operations.provider_facts`, outside a caller's transaction (the rest: ./provider-facts.ts). */
  readonly facts: ProviderFactRepository;
  /** The admin audit reads. */
  readonly audit: AuditRepository;
  /** Payouts unresolved past the horizon, for an operator (`operator_queued_at`). */
  readonly operatorQueue: OperatorQueueRepository;
  /** `operations.shop_pages`: how the payer's page presents each shop. */
  readonly shopPages: ShopPageRepository;

  constructor(sql: Sql, prefix: string) {
    this.#sql = sql;
    this.#prefix = prefix;
    this.withdrawals = new WithdrawalRepository(sql);
    this.handoffs = new HandOffRepository(sql);
    this.links = new LinkRepository(sql);
    this.facts = new ProviderFactRepository(sql);
    this.audit = new AuditRepository(sql);
    this.operatorQueue = new OperatorQueueRepository(sql);
    this.shopPages = new ShopPageRepository(sql);
  }

  /** Calls `onNotify` on each NOTIFY of `channel`; resolves the function that stops listening. */
  async listen(channel: string, onNotify: () => void): Promise<() => Promise<void>> {
    const listener = await this.#sql.listen(channel, onNotify);
    return () => listener.unlisten();
  }

  /** Runs `fn` in one transaction; the methods taking a `tx` join it. */
  transaction<T>(fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    return this.#sql.begin(fn) as Promise<T>;
  }

  /**
   * Records a provider callback as seen; false when it was recorded before (a replay,
   * applied then). Inside the transaction that applies it, so a refused apply forgets it.
   */
  async recordCallback(
    tx: postgres.TransactionSql,
    callback: { provider: string; callbackId: string; operationId: string },
  ): Promise<boolean> {
    const rows = await tx`
      insert into operations.callbacks (provider, callback_id, operation_id)
      values (${callback.provider}, ${callback.callbackId}, ${callback.operationId})
      on conflict do nothing returning 1`;
    return rows.length === 1;
  }

  /** Every registered provider, by name, without its credentials (the column is not even selected). */
  async listProviders(): Promise<
    { name: string; kind: string; base_url: string; methods: string[]; updated_at: string }[]
  > {
    return this.#sql`
      select name, kind, base_url, methods,
             to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
        from operations.providers order by name limit 1000`;
  }

  /** A shop's routes, by method. */
  async listRoutes(
    shopId: string,
  ): Promise<
    { method: string; payin: string[]; payout: string[]; settlement_currency: string; updated_at: string }[]
  > {
    return this.#sql`
      select method, payin, payout, settlement_currency,
             to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
        from operations.routes
       where shop_id = ${shopId} order by method`;
  }

  /** The credential hash and status of the flexible link a payment was created through, if any. */
  async flexibleLinkOf(operationId: string): Promise<{ k_hash: string; status: string } | undefined> {
    const [link] = await this.#sql<{ k_hash: string; status: string }[]>`
      select k_hash, status from operations.flexible_links where operation_id = ${operationId}`;
    return link;
  }

  /**
   * Records that a payment was handed out as a hosted link: a bookkeeping column, no
   * version bump, no event.
   */
  async markHostedPage(operationId: string): Promise<void> {
    await this.#sql`
      update operations.operations set hosted_page = true
      where id = ${operationId} and not hosted_page`;
  }

  /** The events prefix, for the other outbox rows written in this schema (provider facts). */
  get prefix(): string {
    return this.#prefix;
  }

  async findByMop(shopId: string, mop: string, tx: Tx = this.#sql): Promise<OperationRow | undefined> {
    const [row] = await tx<OperationRow[]>`
      select * from operations.operations where shop_id = ${shopId} and merchant_operation_id = ${mop}`;
    return hydrate(row);
  }

  async findById(shopId: string, id: string, tx: Tx = this.#sql): Promise<OperationRow | undefined> {
    const [row] = await tx<OperationRow[]>`
      select * from operations.operations where shop_id = ${shopId} and id = ${id}`;
    return hydrate(row);
  }

  async findAnyById(id: string, tx: Tx = this.#sql): Promise<OperationRow | undefined> {
    const [row] = await tx<OperationRow[]>`select * from operations.operations where id = ${id}`;
    return hydrate(row);
  }

  /** The route and the configs of its providers for one direction, in route order. */
  async routeWithProviders(
    shopId: string,
    method: string,
    direction: "payin" | "payout",
  ): Promise<RouteWithProviders | undefined> {
    const [row] = await this.#sql<RouteColumns[]>`
      select r.payin as route_payin, r.payout as route_payout,
        r.settlement_currency as route_settlement_currency, ${providersOf(this.#sql, direction)}
      from operations.routes r where r.shop_id = ${shopId} and r.method = ${method}`;
    return row ? routeOf(row, direction) : undefined;
  }

  /**
   * What a create reads before it claims its key, in one statement: the row already under
   * (shop, merchant_operation_id) if any, the route with its providers, the routing
   * deadline `budgetMs` ahead by the database's clock, and whether a flexible link holds
   * the key.
   */
  async createContext(
    shopId: string,
    mop: string,
    method: string,
    direction: "payin" | "payout",
    budgetMs: number,
  ): Promise<{
    existing: OperationRow | undefined;
    routing: RouteWithProviders | undefined;
    deadline: Date;
    linkHoldsKey: boolean;
  }> {
    const sql = this.#sql;
    const [row] = await sql<
      (Record<string, unknown> & RouteColumns & { ctx_deadline: string; ctx_link_key: boolean })[]
    >`
      select o.*, r.payin as route_payin, r.payout as route_payout,
        r.settlement_currency as route_settlement_currency, ${providersOf(sql, direction)},
        now() + ${millis(sql, budgetMs)} as ctx_deadline,
        exists (select 1 from operations.flexible_links l
                 where l.shop_id = ${shopId} and l.merchant_operation_id = ${mop}) as ctx_link_key
      from (select 1) as one
      left join operations.operations o on o.shop_id = ${shopId} and o.merchant_operation_id = ${mop}
      left join operations.routes r on r.shop_id = ${shopId} and r.method = ${method}`;
    if (!row) throw new Error("createContext returned no row");
    const {
      route_payin,
      route_payout,
      route_settlement_currency,
      route_providers,
      route_config_version,
      ctx_deadline,
      ctx_link_key,
      ...operation
    } = row;
    return {
      existing: operation.id == null ? undefined : hydrate(operation as unknown as OperationRow),
      routing:
        route_payin == null
          ? undefined
          : routeOf(
              { route_payin, route_payout, route_settlement_currency, route_providers, route_config_version },
              direction,
            ),
      deadline: new Date(ctx_deadline),
      linkHoldsKey: ctx_link_key === true,
    };
  }

  /** A registered provider, or the built-in one of that name (the pool). */
  async provider(name: string): Promise<ProviderConfig | undefined> {
    const builtIn = builtInProvider(name);
    if (builtIn) return builtIn;
    const [row] = await this.#sql<ProviderConfig[]>`
      select name, kind, base_url as "baseUrl", credentials, methods from operations.providers where name = ${name}`;
    return row;
  }

  async putProvider(p: ProviderConfig): Promise<void> {
    await this.#sql`
      insert into operations.providers (name, kind, base_url, credentials, methods)
      values (${p.name}, ${p.kind}, ${p.baseUrl}, ${p.credentials}, ${p.methods})
      on conflict (name) do update set kind = excluded.kind, base_url = excluded.base_url,
        credentials = excluded.credentials, methods = excluded.methods, updated_at = now()`;
  }

  async putRoute(shopId: string, method: string, route: Route): Promise<void> {
    await this.#sql`
      insert into operations.routes (shop_id, method, payin, payout, settlement_currency)
      values (${shopId}, ${method}, ${route.payin}, ${route.payout}, ${route.settlementCurrency})
      on conflict (shop_id, method) do update set payin = excluded.payin, payout = excluded.payout,
        settlement_currency = excluded.settlement_currency, updated_at = now()`;
  }

  /**
   * Inserts a new row unless (shop, merchant_operation_id) already has one; returns the
   * inserted row, or undefined when another request got there first. The id is derived
   * from the same pair, so the conflict may surface on either key: no target is named.
   */
  async insert(
    row: Partial<OperationRow> &
      Pick<OperationRow, "id" | "shop_id" | "merchant_id" | "merchant_operation_id" | "type" | "status">,
  ): Promise<OperationRow | undefined> {
    const [inserted] = await this.#sql<OperationRow[]>`
      insert into operations.operations ${this.#sql(toDriver(row))}
      on conflict do nothing returning *`;
    return hydrate(inserted);
  }

  /**
   * A create's claim of its key in one statement, for a create that knows its route and
   * quote before it reads anything (`RouteCache`): inserts `row` in `routing`, with its
   * routing deadline `budgetMs` ahead by the database's clock, unless the key has a row
   * already (answered as `existing`, as this statement's snapshot has it), a flexible link
   * holds the key (`linkHoldsKey`; the link's own payment, `forLink`, claims it all the
   * same), or the routing configuration is no longer at `configVersion`, the version the
   * route was read at, or has no version row at all (`configStale`: read the route again). None of `claimed`,
   * `existing` and `configStale`: a link holds the key, or another request claimed it
   * after the snapshot (read it again).
   */
  async claim(
    row: ClaimRow,
    options: { budgetMs: number; forLink: boolean; configVersion: string | null },
  ): Promise<{
    claimed?: OperationRow;
    existing?: OperationRow;
    linkHoldsKey: boolean;
    configStale: boolean;
  }> {
    const sql = this.#sql;
    const [out] = await sql<
      (OperationRow & {
        claim_kind: "claimed" | "existing" | null;
        claim_link: boolean;
        claim_stale: boolean;
      })[]
    >`
      with guard as (
        select exists (select 1 from operations.flexible_links l
                        where l.shop_id = ${row.shop_id} and l.merchant_operation_id = ${row.merchant_operation_id}) as holds,
          not exists (select 1 from operations.config_version v
                       where v.version = ${options.configVersion}::bigint) as stale
      ), claimed as (
        insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash,
          type, status, method, currency, expected_amount, client_id, client_ip, number, name, bankname,
          settlement_currency, fx_rate, fx_source, commission_percent, commission_fixed, pricing_version,
          routing_deadline)
        select ${row.id}, ${row.shop_id}, ${row.merchant_id}, ${row.merchant_operation_id}, ${row.request_hash},
          ${row.type}, 'routing', ${row.method}, ${row.currency}, ${row.expected_amount}, ${row.client_id},
          ${row.client_ip}, ${row.number}, ${row.name}, ${row.bankname}, ${row.settlement_currency},
          ${row.fx_rate}, ${row.fx_source}, ${row.commission_percent}, ${row.commission_fixed},
          ${row.pricing_version}, now() + ${millis(sql, options.budgetMs)}
        from guard where (${options.forLink} or not guard.holds) and not guard.stale
        on conflict do nothing
        returning *
      )
      select k.*, guard.holds as claim_link, guard.stale as claim_stale from guard left join (
        select 'claimed' as claim_kind, c.* from claimed c
        union all
        select 'existing', o.* from operations.operations o
         where o.shop_id = ${row.shop_id} and o.merchant_operation_id = ${row.merchant_operation_id}
      ) k on true`;
    if (!out) throw new Error("claim returned no row");
    const { claim_kind, claim_link, claim_stale, ...operation } = out;
    const found = claim_kind === null ? undefined : hydrate(operation as OperationRow);
    return {
      ...(claim_kind === "claimed"
        ? { claimed: found }
        : claim_kind === "existing"
          ? { existing: found }
          : {}),
      linkHoldsKey: claim_link === true,
      configStale: claim_stale === true,
    };
  }

  /**
   * Moves `before` to `before + patch` if nobody changed the row since it was read.
   * With `emit`, the event for the new state goes into the outbox in the same statement.
   * Returns the new row, or undefined when the version moved on (re-read and decide).
   * Private: only `applyFact` writes a change, the one `apply` decided for a fact; the
   * check against the table stays as the last guard.
   */
  private async transition(
    before: OperationRow,
    patch: OperationPatch,
    options: { emit: boolean; receipts?: ReceiptItem[]; statements?: EventStatements; tx?: Tx },
  ): Promise<OperationRow | undefined> {
    const tx = options.tx ?? this.#sql;
    assertTransition(before, patch, options.emit);
    const after: OperationRow = {
      ...before,
      ...patch,
      version: String(BigInt(before.version) + 1n),
      updated_at: new Date(),
    };
    if (after.status === "completed") await this.#assertLegsAgree(after, tx);
    const columns = toDriver({ ...patch, version: after.version, updated_at: after.updated_at });
    if (!options.emit) {
      const rows = await tx`
        update operations.operations set ${this.#sql(columns)}
        where id = ${before.id} and version = ${before.version} returning id`;
      return rows.length === 1 ? after : undefined;
    }
    const event = operationEvent(this.#prefix, after, options.receipts, undefined, options.statements);
    const rows = await tx<{ changed: number }[]>`
      with upd as (
        update operations.operations set ${this.#sql(columns)}
        where id = ${before.id} and version = ${before.version} returning id
      ), ev as (
        insert into operations.outbox (id, subject, payload, headers)
        select ${event.id}, ${event.subject}, ${Buffer.from(event.payload)}, ${JSON.stringify(eventHeaders())}::jsonb from upd
      )
      select count(*)::int as changed, pg_notify('outbox_operations', '') from upd`;
    return rows[0]?.changed === 1 ? after : undefined;
  }

  /**
   * Applies a lifecycle fact to `before` (read, or locked, by the caller): records the
   * legs the fact adds, then writes its change with its event (and, on a completion, the
   * receipts) through `transition`, in one transaction; a fact decided without the legs
   * that adds none is the one statement of `transition`, atomic on its own. `data` adds
   * columns that are not the lifecycle's (requisites, say), `statements` what its event
   * states beyond the row (`EventStatements`). Throws the fact's `DomainError`; returns the row
   * after (the same row when neither the fact nor `data` changes anything), or undefined when the version
   * moved on (re-read and decide).
   */
  async applyFact(
    before: OperationRow,
    fact: Fact,
    options: { tx?: postgres.TransactionSql; data?: DataPatch; statements?: EventStatements } = {},
  ): Promise<{ row: OperationRow | undefined; applied: Applied }> {
    const tx = options.tx;
    if (!tx) {
      // Most facts (an acceptance, a cancel) decide without the legs and add none: their
      // change is one version-checked statement, with no transaction around it.
      const blind = applyWithoutLegs(before, fact);
      if (blind && (isDomainError(blind) || !blind.change || writesOnlyTheRow(blind.change)))
        return this.#write(before, blind, this.#sql, options);
      return this.#sql.begin((t) => this.applyFact(before, fact, { ...options, tx: t }));
    }
    const legs = await this.legs(before.id, tx);
    return this.#write(before, apply({ ...before, legs }, fact), tx, options, legs);
  }

  /** Writes what `apply` decided for `before` (the legs it read, if any, are `legs`). */
  async #write(
    before: OperationRow,
    applied: Applied | DomainError,
    tx: Tx,
    { data, statements }: { data?: DataPatch | undefined; statements?: EventStatements | undefined },
    legs: LegRow[] = [],
  ): Promise<{ row: OperationRow | undefined; applied: Applied }> {
    if (isDomainError(applied)) throw applied;
    const { change, events } = applied;
    if (!change) {
      // Nothing of the lifecycle changes (a declined provider during the cascade): the
      // caller's own columns (its cascade position) are still written, version-checked.
      if (!data || Object.keys(data).length === 0) return { row: before, applied };
      return { row: await this.transition(before, data, { emit: false, tx }), applied };
    }
    for (const leg of change.legs)
      await tx`
        insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at, receipt_id)
        values (${randomUUID()}, ${before.id}, ${before.provider ?? "receipt"}, ${leg.id}, ${leg.amount},
          ${(leg.completedAt ?? new Date()).toISOString()}, ${leg.receiptId ?? null})
        on conflict (operation_id, provider_leg_id) do nothing`;
    const patch: OperationPatch = { ...data, ...change.patch };
    const receipts =
      change.to === "completed"
        ? receiptsOf({ ...before, ...patch }, change.legs.length > 0 ? await this.legs(before.id, tx) : legs)
            .receipts
        : undefined;
    const row = await this.transition(before, patch, {
      emit: events.length > 0,
      receipts,
      statements,
      tx,
    });
    return { row, applied };
  }

  /**
   * Records a completed part of an operation, once per (operation, provider leg id): a
   * replay (or an id recorded before) changes nothing.
   */
  async insertLeg(
    tx: postgres.TransactionSql,
    leg: {
      id: string;
      operationId: string;
      provider: string;
      providerLegId: string;
      amount: string;
      completedAt: string;
      receiptId?: string | null;
    },
  ): Promise<void> {
    await tx`
      insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at, receipt_id)
      values (${leg.id}, ${leg.operationId}, ${leg.provider}, ${leg.providerLegId}, ${leg.amount},
        ${leg.completedAt}, ${leg.receiptId ?? null})
      on conflict do nothing`;
  }

  /**
   * A completion's actual amount covers every recorded leg (it may exceed them: a
   * provider that reported no legs completed the rest). Checked before the write, so a
   * completion that would leave legs unbooked is refused instead of announced.
   */
  async #assertLegsAgree(after: OperationRow, tx: Tx): Promise<void> {
    const [row] = await tx<{ total: string }[]>`
      select coalesce(sum(amount), 0)::text as total from operations.legs where operation_id = ${after.id}`;
    const legs = new Decimal(row?.total ?? "0");
    if (legs.gt(after.actual_amount))
      throw new LegsDisagreeError(after.id, after.actual_amount, legs.toFixed(2));
  }

  /** `ms` milliseconds from now by the database's clock: the deadline a create stores for other replicas. */
  async deadlineIn(ms: number): Promise<Date> {
    const [row] = await this.#sql<{ at: string }[]>`select now() + ${millis(this.#sql, ms)} as at`;
    return new Date(row?.at ?? Date.now() + ms);
  }

  /**
   * Takes over a `routing` row whose driver is gone: only when the database's clock says
   * its deadline plus `graceMs` has passed, so no replica compares its own clock with a
   * deadline another one wrote. Moves the deadline `budgetMs` ahead (by the same clock) in
   * the same version-checked statement, so of two would-be drivers only one wins.
   */
  async takeOverRouting(
    before: OperationRow,
    budgetMs: number,
    graceMs: number,
  ): Promise<OperationRow | undefined> {
    const sql = this.#sql;
    const [row] = await sql<OperationRow[]>`
      update operations.operations
      set routing_deadline = now() + ${millis(sql, budgetMs)},
        version = version + 1, updated_at = now()
      where id = ${before.id} and version = ${before.version} and status = 'routing'
        and coalesce(routing_deadline, created_at) + ${millis(sql, graceMs)} <= now()
      returning *`;
    return hydrate(row);
  }

  /** Whether `id` is the payment of a flexible link (whose refusals keep their own rules). */
  async isFlexiblePayment(id: string): Promise<boolean> {
    const [row] = await this.#sql<{ found: boolean }[]>`
      select exists (select 1 from operations.flexible_links where operation_id = ${id}) as found`;
    return row?.found === true;
  }

  /**
   * Takes a refused create (`rejected`, no provider, never announced) back to `routing` for
   * a retried create, if nobody changed the row since it was read: one statement, so of
   * two retries only one gets the row. The operation is created now, as far as anyone can
   * tell (nothing of it was ever announced): `created_at` restarts, and so does the
   * reconciler's bookkeeping.
   */
  async reopen(before: OperationRow, data: DataPatch): Promise<OperationRow | undefined> {
    const applied =
      stateOf(before) === "refused" ? apply({ ...before, legs: [] }, { kind: "refusal_retried" }) : undefined;
    if (!applied || isDomainError(applied) || !applied.change)
      throw new LifecycleViolationError(before.id, stateOf(before), "routing", "refusal_retried");
    const patch: OperationPatch = { ...data, ...applied.change.patch };
    const columns = toDriver({ ...patch, version: String(BigInt(before.version) + 1n) });
    const [row] = await this.#sql<OperationRow[]>`
      update operations.operations
      set ${this.#sql(columns)}, created_at = now(), updated_at = now(),
        next_check_at = null, reconcile_checks = 0, stuck_alerted_at = null
      where id = ${before.id} and version = ${before.version}
      returning *`;
    return hydrate(row);
  }

  async legs(operationId: string, tx: Tx = this.#sql): Promise<LegRow[]> {
    const rows = await tx<{ id: string; amount: string; completed_at: string; receipt_id: string | null }[]>`
      select id, amount, completed_at, receipt_id from operations.legs where operation_id = ${operationId}
      order by completed_at, id`;
    return rows.map((r) => ({ ...r, completed_at: new Date(r.completed_at) }));
  }

  /** Every operation with this merchant_operation_id, whatever its shop, newest first (operators' search). */
  async findAnyByMop(mop: string, limit: number): Promise<OperationRow[]> {
    return this.#sql<OperationRow[]>`
      select * from operations.operations where merchant_operation_id = ${mop}
      order by created_at desc, id desc limit ${limit}`.then((rows) => rows.map((r) => hydrate(r)!));
  }

  /** An operation's legs with their providers, for operators. */
  async providerLegs(operationId: string): Promise<
    {
      id: string;
      provider: string;
      provider_leg_id: string;
      amount: string;
      completed_at: Date;
      receipt_id: string | null;
    }[]
  > {
    const rows = await this.#sql<
      {
        id: string;
        provider: string;
        provider_leg_id: string;
        amount: string;
        completed_at: string;
        receipt_id: string | null;
      }[]
    >`
      select id, provider, provider_leg_id, amount, completed_at, receipt_id
        from operations.legs where operation_id = ${operationId} order by completed_at, id`;
    return rows.map((r) => ({ ...r, completed_at: new Date(r.completed_at) }));
  }

  /** Payments waiting for an operator (manual_check), oldest first; of one shop when given. */
  async manualChecks(limit: number, shopId?: string): Promise<OperationRow[]> {
    const rows = await this.#sql<OperationRow[]>`
      select * from operations.operations
      where status = 'manual_check' ${shopId ? this.#sql`and shop_id = ${shopId}` : this.#sql``}
      order by updated_at, id limit ${limit}`;
    return rows.map((r) => hydrate(r));
  }

  /** Locks the row for the rest of the transaction. */
  async lock(id: string, tx: postgres.TransactionSql): Promise<OperationRow | undefined> {
    const [row] = await tx<OperationRow[]>`select * from operations.operations where id = ${id} for update`;
    return hydrate(row);
  }

  /**
   * Leases up to `limit` operations that are due for reconciliation, by pushing their
   * `next_check_at` to the end of the lease in the same statement that picks them
   * (`for update skip locked`), so concurrent reconcilers never pick the same row while
   * one of them holds it. Due means:
   * - `pending`/`awaiting_confirmation`: `next_check_at` has passed or, before the first
   *   check, `expires_at` or `created_at + afterMs`, whichever comes first;
   * - `routing`: `routing_deadline + routingGraceMs` has passed (the create died) and
   *   no lease is running.
   * The lease is bookkeeping, not a state change: the version and `updated_at` stay.
   */
  async claimDue(options: {
    afterMs: number;
    routingGraceMs: number;
    leaseMs: number;
    limit: number;
  }): Promise<ReconcileRow[]> {
    const sql = this.#sql;
    const rows = await sql<ReconcileRow[]>`
      with due as (
        select id from operations.operations
        where status in ('routing', 'pending', 'awaiting_confirmation')
          and case when status = 'routing'
            then coalesce(routing_deadline, created_at) + ${millis(sql, options.routingGraceMs)} <= now()
              and (next_check_at is null or next_check_at <= now())
            else coalesce(next_check_at,
              least(expires_at, created_at + ${millis(sql, options.afterMs)})) <= now()
          end
        order by coalesce(next_check_at, created_at)
        limit ${options.limit}
        for update skip locked
      )
      update operations.operations o set next_check_at = now() + ${millis(sql, options.leaseMs)}
      from due where o.id = due.id
      returning o.*`;
    return rows.map((r) => hydrate(r));
  }

  /**
   * Sets when the reconciler looks at the row again: `delayMs` from now, but never after
   * a future `expires_at` (so an expiry is acted on when it comes); `null` returns the
   * row to the ordinary due rule. `counted` records one more question to the provider.
   */
  async scheduleCheck(id: string, delayMs: number | null, counted: boolean): Promise<void> {
    const sql = this.#sql;
    const at =
      delayMs === null
        ? sql`null`
        : sql`least(now() + ${millis(sql, delayMs)}, case when expires_at > now() then expires_at end)`;
    await sql`
      update operations.operations
      set next_check_at = ${at}, reconcile_checks = reconcile_checks + ${counted ? 1 : 0}
      where id = ${id}`;
  }

  /**
   * Marks operations non-terminal for longer than `afterMs` as alerted and returns them;
   * each row is returned once, by one replica, so its warning is logged once.
   */
  async markStuck(afterMs: number, limit: number): Promise<ReconcileRow[]> {
    const sql = this.#sql;
    const rows = await sql<ReconcileRow[]>`
      update operations.operations set stuck_alerted_at = now()
      where id in (
        select id from operations.operations
        where status in ${sql(NON_TERMINAL)} and stuck_alerted_at is null
          and created_at <= now() - ${millis(sql, afterMs)}
        limit ${limit}
        for update skip locked
      )
      returning *`;
    return rows.map((r) => hydrate(r));
  }

  /** How many operations have been non-terminal for longer than `afterMs`, per status. */
  async countStuck(afterMs: number): Promise<Map<string, number>> {
    const sql = this.#sql;
    const rows = await sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from operations.operations
      where status in ${sql(NON_TERMINAL)} and created_at <= now() - ${millis(sql, afterMs)}
      group by status`;
    return new Map(rows.map((r) => [r.status, r.n]));
  }
}
