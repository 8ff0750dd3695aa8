import type { GetOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { OperationNotFoundError } from "../domain/lifecycle/errors.ts";
import { toOperation } from "../domain/model.ts";
import { findOperation } from "../steps/find-operation.ts";
import { receiptEvidence } from "../steps/receipt-evidence.ts";
import { isRefusedCreate } from "../steps/refusals.ts";
import type { ReceiptDeps } from "../steps/review.ts";

/**
 * `GetOperation`: the operation with its receipts. Throws `OperationNotFoundError` while
 * it is routing, for a cancel placeholder, and for a refused create (which created no
 * operation, as the spec has it, and may still be routed by a retry);
 * `ReceiptEvidenceUnavailableError` when links cannot be signed for a read by id.
 */
export async function getOperation(d: ReceiptDeps, req: GetOperationRequest) {
  const row = await findOperation(d.store, req.scope?.shopId ?? "", req.id);
  if (!row || row.status === "routing" || row.request_hash === null) throw new OperationNotFoundError();
  if (await isRefusedCreate(d.store, row)) throw new OperationNotFoundError();
  const lookup = req.id.case === "operationId" ? "operationId" : "merchantOperationId";
  const { receipts, status } = await receiptEvidence(d, row, await d.store.legs(row.id), lookup);
  return { operation: toOperation(row), receipts, receiptEvidenceStatus: status };
}
