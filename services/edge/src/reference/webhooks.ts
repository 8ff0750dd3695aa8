import { CONSUMER_SUBJECTS } from "@gw/events";

/**
 * The OpenAPI 3.1 `webhooks` section: one entry per event type the gateway delivers to a
 * shop's endpoint. The list is the webhooks service's own (the subjects its consumer
 * reads, as services/webhooks/src/events.ts turns them into types), and the body is what
 * `webhookPayload` signs: `{id, type, created_at, data}` with `data` the operation as
 * `POST /v1/get_operation_state` answers it.
 */
export const WEBHOOK_EVENT_TYPES: readonly string[] = CONSUMER_SUBJECTS.webhooks.map((subject) =>
  subject.slice("operations.".length),
);

const WHEN: Record<string, string> = {
  "payment.awaiting_confirmation":
    "A payment whose route requires the payer's receipt entered `awaiting_confirmation` (sent at once on " +
    "entry): upload the receipt with `POST /v1/confirm_payment`.",
  "payment.completed":
    "The provider confirmed the payment: `actual_amount` is what arrived (it may differ from " +
    "`expected_amount`), `commission_amount` and `settlement_amount` what the shop's balance got.",
  "payment.rejected": "The payment failed or expired: no money moved, nothing was credited.",
  "payment.cancelled":
    "The payment was cancelled (`POST /v1/cancel_operation`) before any provider completed it.",
  "payment.manual_check":
    "The payment waits for an operator (`manual_check_reason`: a receipt that looks forged, or a provider " +
    "that has not decided): a later `payment.completed` or `payment.rejected` ends it.",
  "payout.completed": "The provider paid the payout out: the reserve became a debit of the balance.",
  "payout.rejected":
    "The provider refused the payout: the reserve (amount and commission) is back on the balance.",
};

const STATUS_OF = (type: string) => type.split(".")[1] ?? "";

function example(type: string): Record<string, unknown> {
  const [kind = "payment"] = type.split(".");
  const status = STATUS_OF(type);
  const done = status === "completed";
  return {
    id: "0191a5e4-3333-7b8e-9d4e-3f2a1b0c9d8e",
    type,
    created_at: "2026-01-15T10:36:12.000Z",
    data: {
      operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
      merchant_operation_id: kind === "payout" ? "payout-2001" : "order-1001",
      type: kind,
      status,
      method: "WT_RUB_C2C",
      expected_amount: "1000.00",
      ...(kind === "payment" ? { actual_amount: done ? "1000.00" : "0.00" } : {}),
      currency: "RUB",
      ...(done
        ? { commission_amount: "25.00", settlement_amount: "975.00", settlement_currency: "RUB" }
        : {}),
      ...(status === "manual_check" ? { manual_check_reason: "potential_fake" } : {}),
      created_at: "2026-01-15T10:30:00.000Z",
      updated_at: "2026-01-15T10:36:12.000Z",
      receipts: [],
      receipt_evidence_status: "not_ready",
    },
  };
}

const HEADERS = [
  {
    name: "webhook-id",
    description: "The event's id, the same on every retry of the event: process each id once.",
    example: "0191a5e4-3333-7b8e-9d4e-3f2a1b0c9d8e",
  },
  {
    name: "webhook-timestamp",
    description: "Unix seconds of this attempt; refuse one outside your replay window (5 minutes).",
    example: "1768473372",
  },
  {
    name: "webhook-signature",
    description:
      "`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<raw body>` with the shop's secret.",
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  },
] as const;

/** The `webhooks` section, and the one event schema it refers to. */
export function webhooksSection(): { webhooks: Record<string, unknown>; schema: Record<string, unknown> } {
  const schema = {
    type: "object",
    description:
      "What the gateway POSTs to the shop's webhook endpoint, signed per Standard Webhooks. At least once: " +
      "retried with backoff for about 31.7 hours until a 2xx answer.",
    required: ["id", "type", "created_at", "data"],
    properties: {
      id: { type: "string", format: "uuid", description: "The event's id (also the `webhook-id` header)." },
      type: { type: "string", enum: [...WEBHOOK_EVENT_TYPES] },
      created_at: { type: "string", format: "date-time", description: "When the status changed." },
      data: { $ref: "#/components/schemas/OperationState" },
    },
  };
  const webhooks: Record<string, unknown> = {};
  for (const type of WEBHOOK_EVENT_TYPES) {
    webhooks[type] = {
      post: {
        operationId: `webhook_${type.replace(".", "_")}`,
        tags: ["webhooks"],
        summary: type,
        description: `${WHEN[type] ?? `The operation's status became \`${STATUS_OF(type)}\`.`} \`data.status\` is \`${STATUS_OF(type)}\`.`,
        security: [],
        parameters: HEADERS.map((h) => ({
          name: h.name,
          in: "header",
          required: true,
          description: h.description,
          schema: { type: "string" },
          example: h.example,
        })),
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                allOf: [
                  { $ref: "#/components/schemas/WebhookEvent" },
                  { type: "object", properties: { type: { const: type } } },
                ],
              },
              example: example(type),
            },
          },
        },
        responses: {
          "200": { description: "Any 2xx acknowledges the event; it is not sent again." },
          "400": {
            description:
              "Refused (for example a bad signature): the gateway retries, then records it failed.",
          },
        },
      },
    };
  }
  return { webhooks, schema };
}
