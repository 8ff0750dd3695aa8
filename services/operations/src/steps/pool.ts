import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import {
  CONSUMER_SUBJECTS,
  type EventApplier,
  type Nats,
  poolPayinsSkip,
  type RetryPolicy,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import type { Logger } from "@gw/log";
import { Decimal } from "@gw/money";
import {
  type MatchingService,
  type PoolPayout,
  type PoolPayoutEvent,
  PoolPayoutEventSchema,
} from "@gw/proto/gateway/matching/v1/matching_pb";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { Connector, ProviderAnswer } from "../connectors/connector.ts";
import { matchingRefusal } from "../domain/dependency-errors.ts";
import { stateOf } from "../domain/lifecycle/apply.ts";
import { ConcurrentChangeError, StillRoutingError } from "../domain/lifecycle/errors.ts";
import { isTerminal, type OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { Tx } from "../repository/db.ts";
import type { OperationStore } from "../repository/operations.ts";
import { recordHandOff } from "./handoff.ts";
import { recordProviderFact, recordSlotRefused } from "./provider-facts.ts";
import { PAYMENT_REFUSED } from "./refusals.ts";

/**
 * The self-matching pool as a route entry, reached through its connector
 * (connectors/pool.ts) like any provider. Operations owns every state change of the
 * operations involved; the matching service owns the pool's numbers (slots, remainders,
 * contributions). See docs/architecture.md, "Self-matching pool".
 *
 * - A payin routed to `self_matching` is admitted into a payout (`Admit`, one slot of its
 *   amount, for `POOL_SLOT_LIFETIME_MS`): it answers `awaiting_confirmation` with the
 *   payout's destination as requisites, a receipt required, and the slot's expiry as
 *   `expires_at`. `amount_unavailable` is a decline: the next route entry is asked.
 *   Matching's silence is `unknown`: the slot is withdrawn (released) like a provider's
 *   requisites, and so is the slot of a cancelled pool payin (withdrawals.ts).
 * - A payout routed to `self_matching` is put into the pool (`AddPayout`, window
 *   `POOL_WINDOW_MS`) by the create, and recorded `pending` (the ledger reserves its
 *   total); again from its `payout.pending` event until the add succeeds.
 * - The durable consumers `operations-pool-*` apply, exactly once, what follows:
 *   a pool payin that completed confirms its slot (`ConfirmSlot`) with its actual amount;
 *   one rejected or expired releases its slot, and so does a refused payin create
 *   (`payment.refused`) for a slot its late `Admit` left; `pool_payout.completed`
 *   completes the payout with one leg (receipt item) per contribution;
 *   `pool_payout.handed_off` records the hand-off of the remainder to the providers after
 *   the pool in the payout route, which `HandOffDriver` then asks outside the transaction.
 */

/** The route entry that names the pool. */
export { SELF_MATCHING };

/** Matching calls are single-statement; this bounds a slow one. */
const MATCHING_TIMEOUT_MS = 5_000;

export interface PoolDeps {
  store: OperationStore;
  matching: Client<typeof MatchingService>;
  connectorFor: (kind: string) => Connector | undefined;
  callbackBaseUrl: string;
  attemptTimeoutMs: number;
  slotLifetimeMs: number;
  windowMs: number;
  logger: Logger;
}

const isPooled = (row: Pick<OperationRow, "provider">) => row.provider === SELF_MATCHING;

/** What the pool needs to know of an operation it is asked to take. */
export type PoolEntry = Pick<
  OperationRow,
  | "id"
  | "type"
  | "shop_id"
  | "method"
  | "currency"
  | "expected_amount"
  | "number"
  | "name"
  | "bankname"
  | "created_at"
  | "version"
>;

/**
 * The pool's answer to a create routed to it. Payins: `Admit`; an admitted slot is an
 * acceptance with the payout's destination, a receipt required and the slot's expiry.
 * `amount_unavailable` (or a slot of this payin for another amount or already released)
 * is a decline. Payouts: always accepted (the pool takes any payout; `addPayout` puts it
 * in once the create recorded it). Transport errors throw: "no answer".
 */
export async function poolAnswer(
  pool: PoolDeps,
  row: PoolEntry,
  signal: AbortSignal,
): Promise<ProviderAnswer> {
  if (row.type === "payout") return { outcome: "accepted", receiptRequired: false };
  try {
    const { slot } = await pool.matching.admit(
      {
        payinId: row.id,
        shopId: row.shop_id,
        method: row.method ?? "",
        currency: row.currency ?? "",
        amount: row.expected_amount ?? "",
        slotLifetimeMs: BigInt(pool.slotLifetimeMs),
        generation: BigInt(row.version),
      },
      { signal, timeoutMs: MATCHING_TIMEOUT_MS },
    );
    if (!slot?.destination || slot.status !== "reserved" || slot.amount !== row.expected_amount)
      return { outcome: "declined", reason: "pool slot not usable" };
    return {
      outcome: "accepted",
      requisites: {
        number: slot.destination.number,
        name: slot.destination.name || undefined,
        bankname: slot.destination.bankname,
      },
      receiptRequired: true,
      expiresAt: new Date(slot.expiresAt),
    };
  } catch (err) {
    if (matchingRefusal(err) === "amount_unavailable")
      return { outcome: "declined", reason: "amount_unavailable" };
    throw err;
  }
}

/** Puts a pending payout into the pool; idempotent on its id. */
export async function addPayout(pool: PoolDeps, row: PoolEntry): Promise<PoolPayout | undefined> {
  const res = await pool.matching.addPayout(
    {
      operationId: row.id,
      shopId: row.shop_id,
      method: row.method ?? "",
      currency: row.currency ?? "",
      amount: row.expected_amount ?? "",
      destination: { number: row.number ?? "", name: row.name ?? "", bankname: row.bankname ?? undefined },
      windowEndsAt: new Date(row.created_at.getTime() + pool.windowMs).toISOString(),
    },
    { timeoutMs: MATCHING_TIMEOUT_MS },
  );
  return res.payout;
}

/**
 * Frees a payin's slot at once. Unknown slots are fine; a confirmed one is logged (money
 * moved). `generation` is the payin's version the caller acts on: matching remembers the
 * release with it, so an Admit of that routing attempt or an older one that arrives later
 * reserves nothing, while a slot a newer attempt holds is left alone.
 */
export async function releaseSlot(
  pool: PoolDeps,
  payinId: string,
  reason: "expired" | "rejected" | "cancelled",
  generation: string,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await pool.matching.releaseSlot(
      { payinId, reason, generation: BigInt(generation) },
      { timeoutMs: MATCHING_TIMEOUT_MS, ...(signal ? { signal } : {}) },
    );
  } catch (err) {
    const refusal = matchingRefusal(err);
    if (refusal === "not_found") return;
    if (refusal === "slot_settled") {
      pool.logger.error({ operationId: payinId, reason }, "pool: a confirmed slot cannot be released");
      return;
    }
    throw err;
  }
}

/**
 * A pool payin completed (receipt accepted, operator approval): its slot becomes a
 * contribution of the payout, and a payout whose contributions reach its amount completes
 * now. The slot is still reserved (matching never ends a slot while its payment lives),
 * so this settles it. An overpayment settles the slot for the slot's amount (the payin's
 * expected amount) and records the excess as a `slot_refused` provider fact, booked on
 * suspense: the payer's extra money reached the payout's recipient, and no payout takes
 * it. A slot that cannot be settled at all is such a fact for the whole amount. Idempotent;
 * the consumer calls it for every `payment.completed` of a pooled payin, and the receipt
 * flow may call it directly.
 */
export async function onPayinCompleted(pool: PoolDeps, row: OperationRow): Promise<void> {
  if (!isPooled(row) || row.type !== "payment" || row.status !== "completed") return;
  const actual = new Decimal(row.actual_amount);
  const slotAmount = new Decimal(row.expected_amount ?? row.actual_amount);
  const excess = actual.minus(slotAmount);
  try {
    const res = await pool.matching.confirmSlot(
      { payinId: row.id, actualAmount: Decimal.min(actual, slotAmount).toFixed(2) },
      { timeoutMs: MATCHING_TIMEOUT_MS },
    );
    if (excess.gt(0))
      await pool.store.transaction((tx) => recordSlotRefused(pool, tx, row, "excess", excess));
    if (res.payoutCompleted && res.payout) await completePayout(pool, res.payout);
  } catch (err) {
    const code = matchingRefusal(err);
    if (code) {
      // Money arrived that the pool cannot account for (its slot was released when the
      // payment ended, before this completion): recorded and booked for an operator.
      await pool.store.transaction((tx) => recordSlotRefused(pool, tx, row, code));
      return;
    }
    throw err;
  }
}

/** Records the pool's contributions as legs of the payout (one receipt item each). */
async function recordContributions(pool: PoolDeps, tx: Tx, payoutId: string, payout: PoolPayout) {
  for (const c of payout.contributions) {
    await pool.store.insertLeg(tx, {
      id: c.id,
      operationId: payoutId,
      provider: SELF_MATCHING,
      providerLegId: `pool:${c.payinId}`,
      amount: c.amount,
      completedAt: c.completedAt,
    });
  }
}

/** Completes a payout with what was paid into it (the pool's contributions, plus any legs already recorded). */
async function completeWithLegs(pool: PoolDeps, tx: Tx, row: OperationRow) {
  // The pool reports its contributions, recorded as legs already: the payout completes
  // with what they add up to.
  const legs = (await pool.store.legs(row.id, tx)).map((l) => ({ id: l.id, amount: l.amount }));
  const { row: next } = await pool.store.applyFact(
    row,
    { kind: "provider_completed", provider: SELF_MATCHING, legs },
    { tx },
  );
  if (!next) throw new ConcurrentChangeError("payout changed concurrently; retry");
}

/**
 * The payout a closed pool payout (completed or handed off) belongs to, locked in `tx`,
 * when it is the pool's to apply: open and recorded under the pool. A payout still
 * `routing` throws (the event is redelivered, in the end dead-lettered for an operator):
 * its create has not recorded its provider yet. A payout recorded elsewhere (another
 * provider, or none) whose pool payout holds contributions is money the pool paid that no
 * payout accounts for: recorded as a `not_routed` provider fact of the pool (booked on
 * suspense for an operator), never dropped; contributions already legs of that payout (a
 * hand-off to that provider, applied before) are not.
 */
async function pooledPayout(pool: PoolDeps, tx: Tx, payout: PoolPayout): Promise<OperationRow | undefined> {
  const row = await pool.store.lock(payout.operationId, tx);
  if (row?.type !== "payout") {
    pool.logger.error({ operationId: payout.operationId }, "pool: closed pool payout unknown to operations");
    return undefined;
  }
  if (row.status === "routing") throw new StillRoutingError();
  if (row.provider === SELF_MATCHING) return isTerminal(row.status) ? undefined : row;
  // A payout the pool handed off to a provider holds the contributions as its legs
  // already (recordContributions): a stale or repeated hand-off is no new money.
  const legs = new Set((await pool.store.legs(row.id, tx)).map((l) => l.id));
  const unaccounted = payout.contributions.filter((c) => !legs.has(c.id));
  if (unaccounted.length === 0) return undefined;
  const paid = unaccounted.reduce((sum, c) => sum.plus(c.amount), new Decimal(0));
  pool.logger.error(
    { operationId: row.id, provider: row.provider, status: row.status, paid: paid.toFixed(2) },
    "pool: a pool payout closed for a payout recorded elsewhere",
  );
  if (paid.gt(0))
    await recordProviderFact(pool, tx, {
      provider: SELF_MATCHING,
      reference: row.id,
      operation: row,
      kind: "not_routed",
      providerStatus: "completed",
      legs: unaccounted.map((c) => ({
        id: c.id,
        amount: c.amount,
        completedAt: new Date(c.completedAt),
      })),
      direction: "payout",
    });
  return undefined;
}

/**
 * The pool says the payout is fully paid: it completes with one leg per contribution.
 * Idempotent (the row lock and the terminal check make the event and the direct path
 * apply once).
 */
export async function completePayout(pool: PoolDeps, payout: PoolPayout, outer?: Tx): Promise<void> {
  const run = async (tx: Tx) => {
    const row = await pooledPayout(pool, tx, payout);
    if (!row) return;
    await recordContributions(pool, tx, row.id, payout);
    await completeWithLegs(pool, tx, row);
  };
  if (outer) await run(outer);
  else await pool.store.transaction(run);
}

/**
 * The payout's window ended with a remainder (`handed_off_amount`): the pool's
 * contributions are recorded as legs, and the hand-off of the remainder to the providers
 * after `self_matching` in the shop's payout route (those configured for the method, in
 * route order) is recorded as a decision (`recordHandOff`). No provider is called here:
 * this runs in the consumer's (or the reconciler's) transaction, and `HandOffDriver`
 * asks the providers after it committed (see handoff.ts). The payout stays `pending`
 * under the provider that takes it and completes when its callback does, with the pool's
 * contributions plus the provider's legs as receipts. Without any candidate, nobody took
 * it (`nobodyTookIt`).
 */
export async function handOff(pool: PoolDeps, tx: Tx, payout: PoolPayout): Promise<void> {
  const row = await pooledPayout(pool, tx, payout);
  if (!row) return;
  await recordContributions(pool, tx, row.id, payout);
  const remainder = new Decimal(payout.handedOffAmount || "0");
  if (remainder.lte(0)) return completeWithLegs(pool, tx, row);
  const routing = await pool.store.routeWithProviders(row.shop_id, row.method ?? "", "payout");
  const names = routing?.names ?? [];
  const after = names.indexOf(SELF_MATCHING);
  const candidates =
    after < 0
      ? []
      : names.slice(after + 1).filter((_, i) => {
          const provider = routing?.providers[after + 1 + i];
          return (
            provider !== undefined &&
            pool.connectorFor(provider.kind) !== undefined &&
            provider.methods.includes(row.method ?? "")
          );
        });
  if (candidates.length === 0) return nobodyTookIt(pool, tx, row);
  await recordHandOff(tx, row.id, remainder.toFixed(2), candidates);
}

/**
 * No provider took a payout's remainder: with contributions (recorded as its legs) it
 * completes as a self-matching partial (actual amount = what the pool paid, settled on
 * it, so the rest of the reserve returns to the shop); without, it is rejected and its
 * reserve released.
 */
export async function nobodyTookIt(pool: PoolDeps, tx: Tx, row: OperationRow): Promise<void> {
  const legs = await pool.store.legs(row.id, tx);
  if (legs.length > 0) return completeWithLegs(pool, tx, row);
  const { row: next } = await pool.store.applyFact(
    row,
    { kind: "provider_rejected", provider: SELF_MATCHING },
    { tx },
  );
  if (!next) throw new ConcurrentChangeError("payout changed concurrently; retry");
}

const TERMINAL_PAYMENT_EVENTS = new Set(["payment.completed", "payment.rejected", "payment.cancelled"]);

const ROUTED_PAYMENT_EVENTS = new Set(["payment.pending", "payment.awaiting_confirmation"]);

/**
 * What the consumer does with one operation event of a pooled payin. A cancelled one's
 * slot is released here and by its withdrawal (withdrawals.ts, `PoolConnector.cancel`),
 * whichever comes first (a release is idempotent): this consumer retries by redelivery
 * and dead-letters for an operator, where the withdrawal driver gives up after its
 * attempts. A payin cancelled with no provider (the cancel won over its create) may hold
 * a slot its create's `Admit` left, so it is released too.
 */
async function onPaymentEvent(pool: PoolDeps, tx: Tx, event: OperationEvent) {
  if (event.type === PAYMENT_REFUSED) return releaseRefusedSlot(pool, tx, event);
  const routed = ROUTED_PAYMENT_EVENTS.has(event.type);
  if (!routed && !TERMINAL_PAYMENT_EVENTS.has(event.type)) return;
  const id = event.operation?.operationId;
  if (!id) return;
  const row = await pool.store.findAnyById(id, tx);
  if (row?.type !== "payment") return;
  if (routed && !isPooled(row)) return releaseSlotNotTaken(pool, row);
  if (row.status === "cancelled" && row.provider === null) return releaseSlotNotTaken(pool, row, "cancelled");
  if (!isPooled(row)) return;
  switch (row.status) {
    case "cancelled":
      return releaseSlot(pool, row.id, "cancelled", row.version);
    case "completed":
      return onPayinCompleted(pool, row);
    case "rejected": {
      const expired = row.expires_at !== null && row.expires_at.getTime() <= Date.now();
      return releaseSlot(pool, row.id, expired ? "expired" : "rejected", row.version);
    }
    default:
      return;
  }
}

/**
 * A payin a provider after the pool took, or cancelled before any provider was recorded:
 * a slot the pool may still hold for it (its Admit answered too late, say) is released,
 * since its requisites were never shown. Matching never ends a slot on its own, so nobody
 * else would. Whatever the route is now: the Admit may date from a route since changed
 * (a release of no slot is answered `not_found`, and remembered against a late Admit).
 */
async function releaseSlotNotTaken(
  pool: PoolDeps,
  row: OperationRow,
  reason: "rejected" | "cancelled" = "rejected",
): Promise<void> {
  await releaseSlot(pool, row.id, reason, row.version);
}

/**
 * A payin create no provider accepted (`payment.refused`, queued with the refusal): a
 * slot the pool may hold for it (its `Admit` answered too late) is released, since its
 * requisites were never shown and nothing else would end it. Only while the payin is
 * still that refusal (same version), under its row lock held until the release is done:
 * a retry of the create reopens the row under a newer version, so it either waits for
 * the release and routes after it, or came first and this event leaves its slot alone.
 */
async function releaseRefusedSlot(pool: PoolDeps, tx: Tx, event: OperationEvent) {
  const id = event.operation?.operationId;
  if (!id) return;
  const row = await pool.store.lock(id, tx);
  if (row?.type !== "payment" || row.version !== String(event.operation?.version ?? "")) return;
  if (stateOf(row) !== "refused") return;
  await releaseSlot(pool, row.id, "rejected", row.version);
}

type ConsumerSql = Parameters<typeof runConsumer>[0]["sql"];

/**
 * The pool's consumers as their decode and handle, shared by the runner and an
 * operator's retry of a dead letter: `operations-pool-payins` takes the terminal events
 * of payments (to confirm or free their slots), `operations-pool-payouts` the pool's
 * payout events, and `operations-pool-entries` the pending pool payouts (to put them
 * into the pool). Each comes with the subjects it reads.
 */
export function poolConsumers(pool: PoolDeps) {
  const payins: EventApplier<OperationEvent> = {
    durable: "operations-pool-payins",
    decode: (data) => fromBinary(OperationEventSchema, data),
    handle: (tx, event) => onPaymentEvent(pool, tx, event),
    // A payin the pool was never asked for has no slot to release: no transaction.
    skip: poolPayinsSkip,
  };
  const payouts: EventApplier<PoolPayoutEvent> = {
    durable: "operations-pool-payouts",
    decode: (data) => fromBinary(PoolPayoutEventSchema, data),
    handle: async (tx, event) => {
      if (!event.payout) return;
      if (event.type === "pool_payout.completed") return completePayout(pool, event.payout, tx);
      if (event.type === "pool_payout.handed_off") return handOff(pool, tx, event.payout);
    },
  };
  const entries: EventApplier<OperationEvent> = {
    durable: "operations-pool-entries",
    decode: (data) => fromBinary(OperationEventSchema, data),
    handle: (tx, event) => enterPool(pool, tx, event),
  };
  // Each reads only the subjects it acts on (libs/events CONSUMER_SUBJECTS): the payins
  // handler looks at terminal payment events, and at the first event of a payin another
  // provider took (to free a slot the pool may hold for it) unless its create stated that
  // the pool was never asked.
  return {
    payins: { applier: payins, subjects: [...CONSUMER_SUBJECTS["operations-pool-payins"]] },
    payouts: { applier: payouts, subjects: [...CONSUMER_SUBJECTS["operations-pool-payouts"]] },
    entries: { applier: entries, subjects: [...CONSUMER_SUBJECTS["operations-pool-entries"]] },
  };
}

/** Starts the pool's durable consumers (`poolConsumers`), inbox-idempotent like every consumer. */
export async function startPoolConsumers(
  pool: PoolDeps,
  nats: Nats,
  sql: ConsumerSql,
  prefix: string,
  retry?: RetryPolicy,
): Promise<RunningConsumer[]> {
  const logger = pool.logger.child({ component: "pool-consumer" });
  const consumers = poolConsumers(pool);
  const start = <T>(c: { applier: EventApplier<T>; subjects: string[] }) =>
    runConsumer<T>({
      ...c.applier,
      nats,
      prefix,
      subjects: c.subjects,
      sql,
      schema: "operations",
      logger,
      ...(retry === undefined ? {} : { retry }),
    });
  return [await start(consumers.payins), await start(consumers.payouts), await start(consumers.entries)];
}

/**
 * A payout recorded `pending` under the pool enters it from its own `payout.pending`
 * event, committed with the state: an `AddPayout` that failed or was cut short by a crash
 * right after the create is retried by redelivery within seconds, not by the reconciler
 * half an hour later. `AddPayout` is idempotent on the payout's id, so the create's own
 * attempt and this one may both run.
 */
async function enterPool(pool: PoolDeps, tx: Tx, event: OperationEvent): Promise<void> {
  const id = event.operation?.operationId;
  if (!id) return;
  const row = await pool.store.findAnyById(id, tx);
  if (row?.type !== "payout" || row.provider !== SELF_MATCHING || row.status !== "pending") return;
  await addPayout(pool, row);
}

/**
 * The reconciler's question for an operation routed to the pool (no provider to ask):
 * a payin past its `expires_at` is rejected (its slot released as expired); a payout is
 * (re)added to the pool, in case the add after its create failed, and a closed pool payout
 * is applied as its event would be. Returns what happened.
 */
export async function reconcilePooled(
  pool: PoolDeps,
  row: OperationRow,
): Promise<"expired" | "pending" | "completed" | "unchanged"> {
  if (row.type === "payment") {
    if (!row.expires_at || row.expires_at.getTime() > Date.now()) return "pending";
    if (row.status === "manual_check") return "pending";
    const { row: next } = await pool.store.applyFact(row, { kind: "expired" });
    if (!next) return "unchanged";
    await releaseSlot(pool, row.id, "expired", next.version);
    return "expired";
  }
  const payout = await addPayout(pool, row);
  if (!payout || payout.status === "open") return "pending";
  const full = await pool.matching.getPoolPayout({ operationId: row.id }, { timeoutMs: MATCHING_TIMEOUT_MS });
  if (!full.payout) return "pending";
  const closed = full.payout;
  await pool.store.transaction((tx) =>
    closed.status === "completed" ? completePayout(pool, closed, tx) : handOff(pool, tx, closed),
  );
  return "completed";
}
