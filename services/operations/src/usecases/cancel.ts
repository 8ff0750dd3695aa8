import type { CancelOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { operationIdFor } from "../domain/create-request.ts";
import { checkField } from "../domain/field-rules.ts";
import { DependencyUnavailableError, OperationNotFoundError } from "../domain/lifecycle/errors.ts";
import { isTerminal, toOperation } from "../domain/model.ts";
import type { OperationStore } from "../repository/operations.ts";
import { findOperation } from "../steps/find-operation.ts";
import { isRefusedCreate } from "../steps/refusals.ts";

/** Bounded: each attempt lost a race to a concurrent writer; ten in a row means "retry later". */
const ATTEMPTS = 10;

/**
 * `CancelOperation`: the `cancel` fact of the lifecycle, applied to a payment.
 * - No row yet, named by the merchant's key: the decision is recorded as a placeholder
 *   (the unique key makes it and the create exclude each other); the create adopts it.
 * - `routing`: the cancel is recorded; the create records `cancelled` when routing ends.
 * - `pending`, `awaiting_confirmation`, or a refused create: `cancelled`, with its event.
 * - Already terminal: answered as it is (`already_terminal`).
 * Throws `NotCancellableError` (a payout, a payment in manual_check), `OperationNotFoundError`,
 * `ValidationError`, and `DependencyUnavailableError` after losing every race.
 */
export async function cancelOperation(store: OperationStore, req: CancelOperationRequest) {
  const shopId = req.scope?.shopId ?? "";
  checkField("reason", req.reason);
  const reason = req.reason || "cancel";
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const row = await findOperation(store, shopId, req.id);
    if (!row) {
      if (req.id.case !== "merchantOperationId") throw new OperationNotFoundError();
      const placeholder = await store.insert({
        id: operationIdFor(shopId, req.id.value),
        shop_id: shopId,
        merchant_id: "00000000-0000-0000-0000-000000000000",
        merchant_operation_id: req.id.value,
        request_hash: null,
        type: "payment",
        status: "cancelled",
        cancel_requested: true,
        cancelled_by_command: true,
        cancel_reason: reason,
      });
      if (placeholder) return { outcome: "cancelled", operation: toOperation(placeholder) };
      continue;
    }
    if (row.type === "payment" && row.status === "cancelled" && row.cancelled_by_command)
      return { outcome: "cancelled", operation: toOperation(row) };
    // A refused create is no decision: the cancel decides it (the lifecycle's refused
    // state). Any other terminal payment, a flexible link's refusal included, stays as it is.
    const refused = await isRefusedCreate(store, row);
    if (row.type === "payment" && !refused && isTerminal(row.status))
      return { outcome: "already_terminal", operation: toOperation(row) };
    const { row: next } = await store.applyFact(row, { kind: "cancel", reason });
    if (next) {
      // During routing the create will record `cancelled` itself; the decision is durable now.
      const shown = row.status === "routing" ? { ...next, status: "cancelled" as const, number: null } : next;
      return { outcome: "cancelled", operation: toOperation(shown) };
    }
  }
  throw new DependencyUnavailableError("cancel not accepted; retry");
}
