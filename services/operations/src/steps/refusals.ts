import { operationEvent } from "../domain/events.ts";
import type { OperationRow } from "../domain/model.ts";
import type { Tx } from "../repository/db.ts";
import type { DataPatch, OperationStoreCore } from "../repository/operations.ts";

/**
 * A create no provider accepted is recorded `rejected` with no provider and no public
 * event (a retry routes it again), together with an internal event in the same
 * transaction, so what the routing may have left held is freed even when the process dies
 * right after the refusal:
 * - `payout.refused`: the ledger's consumer releases the payout's reserve
 *   (payout-reserve.ts);
 * - `payment.refused`: the pool's consumer releases a slot the pool may hold for the payin
 *   (an `Admit` that answered too late), unless the payin moved on since (usecases/pool-events.ts,
 *   `releaseRefusedSlot`).
 * Merchants never receive either (webhooks deliver only the public types).
 */

/** The internal event of a refused payout create (the ledger's `PAYOUT_REFUSED`). */
export const PAYOUT_REFUSED = "payout.refused";
/** The internal event of a refused payment create (the pool's consumer reads it). */
export const PAYMENT_REFUSED = "payment.refused";

/**
 * Records a create that no provider accepted (the lifecycle's `refused` fact: `rejected`
 * with no provider, or `cancelled` when a cancel arrived meanwhile) with, for a refusal,
 * its internal `<type>.refused` event, in one transaction; for a cancellation, with what
 * `onCancelled` writes in that transaction (a withdrawal). Undefined when the row's version
 * moved on (re-read and decide).
 */
export async function recordRefusal(
  store: OperationStoreCore,
  row: OperationRow,
  data: DataPatch,
  onCancelled?: (tx: Tx) => Promise<void>,
): Promise<OperationRow | undefined> {
  return store.transaction(async (tx) => {
    const { row: next } = await store.applyFact(row, { kind: "refused" }, { data, tx });
    if (next?.status === "cancelled" && onCancelled) await onCancelled(tx);
    if (next?.status !== "rejected") return next;
    const type = next.type === "payout" ? PAYOUT_REFUSED : PAYMENT_REFUSED;
    const event = operationEvent(store.prefix, next, [], type);
    await store.enqueue(tx, event);
    return next;
  });
}

/**
 * A create that no provider accepted: `rejected` with no provider, never announced (no
 * event). A flexible link's payment is left out: its refusals keep the link's rules (a
 * retry answers the refusal again, and a payment the link announced as rejected is final).
 */
export async function isRefusedCreate(store: OperationStoreCore, row: OperationRow): Promise<boolean> {
  return (
    row.status === "rejected" &&
    row.provider === null &&
    row.request_hash !== null &&
    !(await store.isFlexiblePayment(row.id))
  );
}
