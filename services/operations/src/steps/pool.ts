import type { PoolPayout } from "@gw/proto/gateway/matching/v1/matching_pb";
import type { ProviderAnswer } from "../connectors/connector.ts";
import { matchingRefusal } from "../domain/dependency-errors.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import { MATCHING_TIMEOUT_MS, type PoolDeps, type PoolEntry } from "./pool-deps.ts";
import { completePayout, handOff } from "./pool-payouts.ts";

/**
 * The self-matching pool as a route entry, reached through its connector
 * (pool-connector.ts) like any provider. Operations owns every state change of the
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
        generation: slotGeneration(row.version),
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
 * The generation matching knows a payin's routing attempt by: its version plus one.
 * Matching lets generation 0 pass every check (a flexible link's own Admit, which no
 * version orders, and a release with no payment row to name), so the first attempt of a
 * payin, at version 0, must not be sent as 0: a late copy of its Admit would then reserve
 * a slot after the attempt's withdrawal released it, and hold the payout's remainder.
 */
export const slotGeneration = (version: string): bigint => BigInt(version) + 1n;

/**
 * Frees a payin's slot at once. Unknown slots are fine; a confirmed one is logged (money
 * moved). `version` is the payin's version the caller acts on: matching remembers the
 * release at its generation (`slotGeneration`), so an Admit of that routing attempt or an
 * older one that arrives later reserves nothing, while a slot a newer attempt holds is
 * left alone. Undefined (no payment row: a flexible link's attempt that never wrote one)
 * releases whatever slot the id holds.
 */
export async function releaseSlot(
  pool: PoolDeps,
  payinId: string,
  reason: "expired" | "rejected" | "cancelled",
  version: string | undefined,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await pool.matching.releaseSlot(
      { payinId, reason, generation: version === undefined ? 0n : slotGeneration(version) },
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
