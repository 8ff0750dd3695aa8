import type { FindOperationsRequest, FoundOperation } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import { type OperationRow, toOperation } from "../domain/model.ts";
import { receiptsOf } from "../domain/receipts-of.ts";
import type { OperationStore } from "../repository/operations.ts";

/**
 * `FindOperations`, for operators: the operation with an id, or every operation with a
 * `merchant_operation_id` whatever its shop, with its shop, provider, legs and receipts.
 * Placeholders (a cancel before its create) and creates still routing are shown too: an
 * operator looking for an operation needs to see that it is there and why.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function findOperations(
  store: OperationStore,
  req: FindOperationsRequest,
): Promise<{ operations: FoundOperation[] }> {
  const limit = req.limit >= 1 && req.limit <= 50 ? req.limit : 20;
  let rows: OperationRow[];
  if (req.id.case === "operationId") {
    if (!UUID.test(req.id.value)) throw new ValidationError("operation_id must be a UUID", "operation_id");
    const row = await store.findAnyById(req.id.value);
    rows = row ? [row] : [];
  } else if (req.id.case === "merchantOperationId" && req.id.value) {
    rows = await store.findAnyByMop(req.id.value, limit);
  } else {
    throw new ValidationError("exactly one of operation_id and merchant_operation_id is required");
  }
  const operations: FoundOperation[] = [];
  for (const row of rows) {
    const legs = await store.providerLegs(row.id);
    const { receipts } = receiptsOf(
      row,
      legs.map((l) => ({
        id: l.id,
        amount: l.amount,
        completed_at: l.completed_at,
        receipt_id: l.receipt_id,
      })),
    );
    operations.push({
      $typeName: "gateway.operations.v1.FoundOperation",
      shopId: row.shop_id,
      merchantId: row.merchant_id,
      operation: toOperation(row),
      provider: row.provider ?? undefined,
      legs: legs.map((l) => ({
        $typeName: "gateway.operations.v1.Leg",
        id: l.id,
        provider: l.provider,
        providerLegId: l.provider_leg_id,
        amount: l.amount,
        completedAt: l.completed_at.toISOString(),
        receiptId: l.receipt_id ?? undefined,
      })),
      receipts,
    });
  }
  return { operations };
}
