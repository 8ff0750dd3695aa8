import { create, toBinary } from "@bufbuild/protobuf";
import type { OutboxRow } from "@gw/events";
import {
  type OperationEvent,
  OperationEventSchema,
  type ReceiptItem,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { v7 as uuidv7 } from "uuid";
import { eventType, type OperationRow, toOperation } from "./model.ts";

/** What the writer of an event states beyond the row (see `OperationEvent`). */
export type EventStatements = Pick<OperationEvent, "poolMayHoldSlot">;

/**
 * The outbox row announcing a row's current state, published on
 * `<prefix>.operations.<type>.<status>`, or under an internal `type` that names no status
 * (`payout.refused`, `payment.refused`: steps/refusals.ts). Terminal events carry the receipts.
 */
export function operationEvent(
  prefix: string,
  row: OperationRow,
  receipts: ReceiptItem[] = [],
  type = eventType(row),
  statements: EventStatements = {},
): OutboxRow {
  const id = uuidv7();
  const event = create(OperationEventSchema, {
    eventId: id,
    type,
    occurredAt: row.updated_at.toISOString(),
    scope: { merchantId: row.merchant_id, shopId: row.shop_id },
    operation: toOperation(row),
    receipts,
    ...statements,
  });
  return { id, subject: `${prefix}.operations.${type}`, payload: toBinary(OperationEventSchema, event) };
}
