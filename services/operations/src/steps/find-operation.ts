import type { GetOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { checkField } from "../domain/field-rules.ts";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import type { OperationStore } from "../repository/operations.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A merchant's reference to one of its operations: by our id or by its own key. */
export type OperationRef = GetOperationRequest["id"];

/**
 * The row `id` names in the shop, if any. Throws `ValidationError` for an id that is not
 * a UUID, or when neither id is given.
 */
export async function findOperation(
  store: OperationStore,
  shopId: string,
  id: OperationRef,
): Promise<OperationRow | undefined> {
  if (id.case === "operationId") {
    if (!UUID.test(id.value)) throw new ValidationError("operation_id must be a UUID", "operation_id");
    return store.findById(shopId, id.value);
  }
  if (id.case === "merchantOperationId" && id.value) {
    checkField("merchant_operation_id", id.value);
    return store.findByMop(shopId, id.value);
  }
  throw new ValidationError("exactly one of operation_id and merchant_operation_id is required");
}
