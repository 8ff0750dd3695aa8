import { operationStateJson } from "@gw/api";
import { CONSUMER_SUBJECTS } from "@gw/events";
import type { Logger } from "@gw/log";
import type { OperationEvent } from "@gw/proto/gateway/operations/v1/operations_pb";
import type postgres from "postgres";
import { deliveryOutcomes } from "./metrics.ts";

/**
 * The event types merchants receive: the subjects the webhooks consumer reads
 * (`CONSUMER_SUBJECTS.webhooks`: entry into `awaiting_confirmation`, and every terminal or
 * review status), without their `operations.` stream prefix.
 */
export const DELIVERED_EVENT_TYPES: ReadonlySet<string> = new Set(
  CONSUMER_SUBJECTS.webhooks.map((s) => s.slice("operations.".length)),
);

/** Statuses after which an operation no longer changes. */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["completed", "rejected", "cancelled"]);

/** The error recorded for a delivery whose shop has no endpoint. */
export const NO_ENDPOINT = "no endpoint configured";

/**
 * The webhook body of an event, as the exact string that is signed and sent on every
 * attempt. `data` is the same object as the get_operation_state response, rendered by
 * @gw/api, with evidence `complete` once the operation is terminal and has receipts.
 */
export function webhookPayload(event: OperationEvent): string {
  const op = event.operation;
  if (!op) throw new Error("operation event without an operation");
  const evidence = TERMINAL_STATUSES.has(op.status) && event.receipts.length > 0 ? "complete" : "not_ready";
  return JSON.stringify({
    id: event.eventId,
    type: event.type,
    created_at: event.occurredAt,
    data: operationStateJson(op, event.receipts, evidence),
  });
}

/**
 * Turns one operation event into a delivery, inside the consumer's transaction (which
 * also records the event in the inbox). The delivery is keyed by the event id, so the
 * same event arriving twice, even under another message id, yields one delivery. A
 * shop without an endpoint gets its delivery recorded as `failed` at once, visible in
 * the delivery log and redeliverable once an endpoint exists. The NOTIFY wakes the
 * delivery workers of every replica at commit.
 */
export async function recordDelivery(
  tx: postgres.TransactionSql,
  event: OperationEvent,
  messageId: string,
  logger: Logger,
): Promise<void> {
  if (!DELIVERED_EVENT_TYPES.has(event.type)) return;
  const eventId = event.eventId || messageId;
  const op = event.operation;
  const shopId = event.scope?.shopId;
  if (!op || !shopId) {
    // Redelivering a malformed event would never fix it: drop it loudly instead.
    logger.error({ eventId, type: event.type }, "operation event without scope or operation; not delivered");
    return;
  }
  const [endpoint] = await tx<{ one: number }[]>`
    select 1 as one from webhooks.endpoints where shop_id = ${shopId}`;
  const payload = webhookPayload(event);
  const inserted = await tx`
    insert into webhooks.deliveries
      (event_id, shop_id, operation_id, operation_version, event_type, occurred_at, payload,
       status, next_attempt_at, last_error)
    values
      (${eventId}, ${shopId}, ${op.operationId}, ${op.version.toString()}, ${event.type},
       ${event.occurredAt || new Date().toISOString()}, ${payload},
       ${endpoint ? "pending" : "failed"}, case when ${!!endpoint} then now() end,
       ${endpoint ? null : NO_ENDPOINT})
    on conflict (event_id) do nothing
    returning 1`;
  if (inserted.length === 0) return;
  if (endpoint) await tx`select pg_notify('webhooks_deliveries', '')`;
  else {
    deliveryOutcomes.inc({ outcome: "no_endpoint" });
    logger.warn({ eventId, shopId, type: event.type }, "webhook not deliverable: no endpoint configured");
  }
}
