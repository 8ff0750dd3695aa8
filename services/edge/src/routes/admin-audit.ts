import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients, EVENT_HEALTH_HOLDERS } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { errorResponses, jsonResponse, openApiApp } from "../schemas.ts";

/**
 * Admin audit reads: what an operator (or the money-conservation checker,
 * `pnpm --filter @gw/tests conservation`) compares with the providers' own books, read
 * from the services that own it: every operation (operations), provider clearing per
 * operation and per shop (ledger), the outboxes and durable consumers of every service
 * (event health), and every webhook delivery (webhooks). Lists are keyset paginated:
 * pass the page's `next_cursor` as `cursor` until it is null.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: audit"];

const page = (max: number, fallback: number) =>
  z.object({
    cursor: z
      .string()
      .max(512, { error: "cursor must be the next_cursor of the page before" })
      .optional()
      .openapi({ description: "The `next_cursor` of the page before; absent for the first page." }),
    limit: z.coerce
      .number({ error: `limit must be an integer from 1 to ${max}` })
      .int({ error: `limit must be an integer from 1 to ${max}` })
      .min(1, { error: `limit must be an integer from 1 to ${max}` })
      .max(max, { error: `limit must be an integer from 1 to ${max}` })
      .default(fallback),
  });
const nextCursor = z
  .string()
  .nullable()
  .openapi({ description: "Pass as `cursor` for the next page; null on the last page." });
const decimal = (description: string) => z.string().openapi({ example: "1000.00", description });

const AuditOperationSchema = z
  .object({
    id: z.string().openapi({ format: "uuid" }),
    shop_id: z.string().openapi({ format: "uuid" }),
    type: z.enum(["payment", "payout"]),
    status: z.string().openapi({
      description: "The public statuses, plus `routing` for a create still in flight.",
      example: "completed",
    }),
    provider: z
      .string()
      .nullable()
      .openapi({ description: "Routed to; null while routing, for a refused create and for a placeholder." }),
    amount: z.string().nullable().openapi({ description: "The amount asked for; null for a placeholder." }),
    actual_amount: decimal("What arrived or was paid out: the sum of its legs."),
    currency: z.string().nullable().openapi({ example: "RUB" }),
    placeholder: z.boolean().openapi({
      description: "A cancel that arrived before its create: never sent to a provider.",
    }),
    legs: z.array(
      z.object({
        provider: z.string(),
        amount: decimal("The sum of this provider's completed legs."),
        count: z.number().int(),
      }),
    ),
    created_at: z.string().openapi({ format: "date-time" }),
    updated_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("AuditOperation");

const ClearingSchema = z
  .object({
    operation_id: z.string().openapi({ format: "uuid" }),
    shop_id: z.string(),
    currency: z
      .string()
      .nullable()
      .openapi({ description: "Null when the operation has transfers but none on provider clearing." }),
    booked: decimal("Provider clearing, debits minus credits, over all the operation's transfers."),
    booked_on_completion: decimal("The part booked by its payment_settle and payout_complete transfers."),
    payout_completes: z.number().int().openapi({ description: "payout_complete transfers (one at most)." }),
  })
  .openapi("AuditClearing");

const ShopTotalSchema = z
  .object({
    shop_id: z.string(),
    currency: z.string(),
    provider_clearing: decimal("Provider clearing, debits minus credits, over every transfer."),
    accounts_sum: decimal("The sum of all the shop's account balances in the currency: zero when sound."),
  })
  .openapi("AuditShopTotal");

const EventHealthSchema = z
  .object({
    service: z.enum(EVENT_HEALTH_HOLDERS),
    has_outbox: z.boolean(),
    outbox_total: z.number().int().openapi({ description: "Every event its outbox holds." }),
    outbox_unpublished: z.number().int().openapi({ description: "Events the relay has not published yet." }),
    unpublished_event_ids: z
      .array(z.string())
      .openapi({ description: "The oldest unpublished events' ids, at most 100." }),
    consumers: z.array(
      z.object({
        durable: z.string().openapi({ example: "ledger" }),
        pending: z
          .number()
          .int()
          .openapi({ description: "Events not yet given to it (JetStream num_pending)." }),
        ack_pending: z.number().int().openapi({
          description:
            "Given and not yet acknowledged (num_ack_pending): being applied or waiting for a retry.",
        }),
        delivered: z.number().int().openapi({ description: "Acknowledged so far." }),
      }),
    ),
  })
  .openapi("AuditEventHealth");

const AuditDeliverySchema = z
  .object({
    event_id: z.string().openapi({ format: "uuid" }),
    event_type: z.string().openapi({ example: "payment.completed" }),
    operation_id: z.string().openapi({ format: "uuid" }),
    shop_id: z.string().openapi({ format: "uuid" }),
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.number().int(),
    created_at: z.string().openapi({ format: "date-time" }),
    delivered_at: z.string().nullable().openapi({ format: "date-time" }),
  })
  .openapi("AuditDelivery");

const routes = {
  operations: createRoute({
    method: "get",
    path: "/audit/operations",
    tags,
    security,
    summary: "Every operation of every shop, in id order, a page at a time",
    request: { query: page(1000, 500) },
    responses: {
      200: jsonResponse(
        z.object({ operations: z.array(AuditOperationSchema), next_cursor: nextCursor }),
        "A page of operations.",
      ),
      ...errorResponses(400, 401, 503),
    },
  }),
  clearing: createRoute({
    method: "get",
    path: "/audit/ledger/operations",
    tags,
    security,
    summary: "Provider clearing per operation and currency, in operation id order",
    request: { query: page(1000, 500) },
    responses: {
      200: jsonResponse(
        z.object({ operations: z.array(ClearingSchema), next_cursor: nextCursor }),
        "A page of operations' clearing (an operation in two currencies has two rows).",
      ),
      ...errorResponses(400, 401, 503),
    },
  }),
  shops: createRoute({
    method: "get",
    path: "/audit/ledger/shops",
    tags,
    security,
    summary: "Provider clearing and the accounts' sum per shop and currency",
    request: { query: page(1000, 500) },
    responses: {
      200: jsonResponse(
        z.object({ totals: z.array(ShopTotalSchema), next_cursor: nextCursor }),
        "A page of shop totals.",
      ),
      ...errorResponses(400, 401, 503),
    },
  }),
  events: createRoute({
    method: "get",
    path: "/audit/events",
    tags,
    security,
    summary: "Every service's outbox and durable consumers: what is not yet published or applied",
    description:
      "Every service with an outbox or consumers is asked; if one cannot answer, the answer is " +
      "`503` rather than incomplete. An event a consumer gave up on is acknowledged and listed " +
      "under `/dead-letters` instead.",
    responses: {
      200: jsonResponse(z.object({ services: z.array(EventHealthSchema) }), "Per service."),
      ...errorResponses(401, 503),
    },
  }),
  deliveries: createRoute({
    method: "get",
    path: "/audit/webhook-deliveries",
    tags,
    security,
    summary: "Every webhook delivery of every shop, in event id order, a page at a time",
    request: {
      query: page(1000, 500).extend({
        status: z
          .enum(["pending", "delivered", "failed"], { error: "status must be pending, delivered or failed" })
          .optional(),
        terminal: z.enum(["true", "false"], { error: "terminal must be true or false" }).optional().openapi({
          description: "`true`: only terminal event types (completed, rejected, cancelled, expired).",
        }),
      }),
    },
    responses: {
      200: jsonResponse(
        z.object({ deliveries: z.array(AuditDeliverySchema), next_cursor: nextCursor }),
        "A page of deliveries.",
      ),
      ...errorResponses(400, 401, 503),
    },
  }),
};

const orNull = (value: string) => (value === "" ? null : value);

export function adminAuditRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS };
  return openApiApp()
    .openapi(routes.operations, async (c) => {
      const q = c.req.valid("query");
      const res = await clients.operations.listOperationsAudit(
        { cursor: q.cursor ?? "", limit: q.limit },
        opts,
      );
      const operations = res.operations.map((o) => ({
        id: o.id,
        shop_id: o.shopId,
        type: o.type as "payment" | "payout",
        status: o.status,
        provider: orNull(o.provider),
        amount: orNull(o.amount),
        actual_amount: o.actualAmount,
        currency: orNull(o.currency),
        placeholder: o.placeholder,
        legs: o.legs.map((l) => ({ provider: l.provider, amount: l.amount, count: l.count })),
        created_at: o.createdAt,
        updated_at: o.updatedAt,
      }));
      return c.json({ operations, next_cursor: orNull(res.nextCursor) }, 200);
    })
    .openapi(routes.clearing, async (c) => {
      const q = c.req.valid("query");
      const res = await clients.ledger.listClearingByOperation(
        { cursor: q.cursor ?? "", limit: q.limit },
        opts,
      );
      const operations = res.operations.map((o) => ({
        operation_id: o.operationId,
        shop_id: o.shopId,
        currency: orNull(o.currency),
        booked: o.booked,
        booked_on_completion: o.bookedOnCompletion,
        payout_completes: o.payoutCompletes,
      }));
      return c.json({ operations, next_cursor: orNull(res.nextCursor) }, 200);
    })
    .openapi(routes.shops, async (c) => {
      const q = c.req.valid("query");
      const res = await clients.ledger.listShopTotals({ cursor: q.cursor ?? "", limit: q.limit }, opts);
      const totals = res.totals.map((t) => ({
        shop_id: t.shopId,
        currency: t.currency,
        provider_clearing: t.providerClearing,
        accounts_sum: t.accountsSum,
      }));
      return c.json({ totals, next_cursor: orNull(res.nextCursor) }, 200);
    })
    .openapi(routes.events, async (c) => {
      const holders = clients.eventHealth;
      if (!holders) throw new ApiError(503, "dependency_unavailable", "event health is not reachable");
      const services = await Promise.all(
        EVENT_HEALTH_HOLDERS.map(async (service) => {
          const h = await holders[service].getEventHealth({}, opts);
          return {
            service,
            has_outbox: h.hasOutbox,
            outbox_total: Number(h.outboxTotal),
            outbox_unpublished: Number(h.outboxUnpublished),
            unpublished_event_ids: h.unpublishedEventIds,
            consumers: h.consumers.map((k) => ({
              durable: k.durable,
              pending: Number(k.pending),
              ack_pending: Number(k.ackPending),
              delivered: Number(k.delivered),
            })),
          };
        }),
      );
      return c.json({ services }, 200);
    })
    .openapi(routes.deliveries, async (c) => {
      const q = c.req.valid("query");
      const res = await clients.webhooks.listDeliveriesAudit(
        {
          cursor: q.cursor ?? "",
          limit: q.limit,
          status: q.status ?? "",
          terminalOnly: q.terminal === "true",
        },
        opts,
      );
      const deliveries = res.deliveries.map((d) => ({
        event_id: d.eventId,
        event_type: d.eventType,
        operation_id: d.operationId,
        shop_id: d.shopId,
        status: d.status as "pending" | "delivered" | "failed",
        attempts: d.attempts,
        created_at: d.createdAt,
        delivered_at: d.deliveredAt ?? null,
      }));
      return c.json({ deliveries, next_cursor: orNull(res.nextCursor) }, 200);
    });
}
