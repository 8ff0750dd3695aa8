import { fromBinary } from "@bufbuild/protobuf";
import {
  CONSUMER_SUBJECTS,
  type EventApplier,
  type Nats,
  poolPayinsSkip,
  type RetryPolicy,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import { Decimal } from "@gw/money";
import { type PoolPayoutEvent, PoolPayoutEventSchema } from "@gw/proto/gateway/matching/v1/matching_pb";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { matchingRefusal } from "../domain/dependency-errors.ts";
import { stateOf } from "../domain/lifecycle/apply.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { Tx } from "../repository/db.ts";
import { addPayout, releaseSlot } from "../steps/pool.ts";
import { isPooled, MATCHING_TIMEOUT_MS, type PoolDeps } from "../steps/pool-deps.ts";
import { completePayout, handOff } from "../steps/pool-payouts.ts";
import { recordSlotRefused } from "../steps/provider-facts.ts";
import { PAYMENT_REFUSED } from "../steps/refusals.ts";

/** The pool's durable consumers: payins' terminal events, the pool's payout events, pending pool payouts. */

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

const TERMINAL_PAYMENT_EVENTS = new Set(["payment.completed", "payment.rejected", "payment.cancelled"]);

const ROUTED_PAYMENT_EVENTS = new Set(["payment.pending", "payment.awaiting_confirmation"]);

/**
 * What the consumer does with one operation event of a pooled payin. A cancelled one's
 * slot is released here and by its withdrawal (steps/withdrawals.ts, `PoolConnector.cancel`),
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
  // The payins' and entries' handlers call matching and commit transactions of their own:
  // one event per transaction, so a batch's rerun never repeats a neighbour's calls and no
  // transaction stays open across many of them (libs/events, `maxBatch`).
  return {
    payins: { applier: payins, subjects: [...CONSUMER_SUBJECTS["operations-pool-payins"]], maxBatch: 1 },
    payouts: { applier: payouts, subjects: [...CONSUMER_SUBJECTS["operations-pool-payouts"]] },
    entries: { applier: entries, subjects: [...CONSUMER_SUBJECTS["operations-pool-entries"]], maxBatch: 1 },
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
  const start = <T>(c: { applier: EventApplier<T>; subjects: string[]; maxBatch?: number }) =>
    runConsumer<T>({
      ...c.applier,
      nats,
      prefix,
      subjects: c.subjects,
      ...(c.maxBatch === undefined ? {} : { maxBatch: c.maxBatch }),
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
