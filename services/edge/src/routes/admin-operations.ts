import { operationJson } from "@gw/api";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { errorResponses, jsonResponse, OperationSchema, openApiApp } from "../schemas.ts";
import { ProviderFactJson, providerFactJson } from "./admin-provider-facts.ts";
import { DeliverySchema, deliveryJson } from "./admin-shops.ts";

/**
 * Admin: find an operation by its id, or by a `merchant_operation_id` across shops, with
 * everything an operator asks about it: its shop, the provider it was routed to, its
 * legs, receipts, provider facts and webhook deliveries, each read from the service that
 * owns it (operations, webhooks).
 */

const FoundSchema = z
  .object({
    shop_id: z.string().openapi({ format: "uuid" }),
    merchant_id: z.string().openapi({ format: "uuid" }),
    provider: z
      .string()
      .nullable()
      .openapi({ description: "Routed to; null while routing or for a refused create." }),
    operation: OperationSchema,
    legs: z.array(
      z.object({
        id: z.string(),
        provider: z.string(),
        provider_leg_id: z.string(),
        amount: z.string(),
        completed_at: z.string(),
        receipt_id: z.string().nullable(),
      }),
    ),
    receipts: z.array(z.object({ id: z.string(), amount: z.string(), completed_at: z.string() })),
    provider_facts: z.array(ProviderFactJson),
    webhook_deliveries: z.array(DeliverySchema),
  })
  .openapi("FoundOperation");

const route = createRoute({
  method: "get",
  path: "/operations/search",
  tags: ["admin: operations"],
  security: [{ AdminBearer: [] }],
  summary: "Find operations by operation_id, or by merchant_operation_id in every shop",
  description: "Exactly one of the two; newest first, at most 20.",
  request: {
    query: z.object({
      operation_id: z.uuid({ error: "operation_id must be a UUID" }).optional(),
      merchant_operation_id: z
        .string()
        .min(1, { error: "merchant_operation_id must not be empty" })
        .max(255, { error: "merchant_operation_id must be at most 255 characters" })
        .optional(),
    }),
  },
  responses: {
    200: jsonResponse(z.object({ operations: z.array(FoundSchema) }), "What was found (possibly nothing)."),
    ...errorResponses(400, 401, 503),
  },
});

export function adminOperationRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS };
  return openApiApp().openapi(route, async (c) => {
    const q = c.req.valid("query");
    if ((q.operation_id === undefined) === (q.merchant_operation_id === undefined))
      throw new ApiError(
        400,
        "validation_failed",
        "give exactly one of operation_id and merchant_operation_id",
      );
    const found = await clients.operations.findOperations(
      q.operation_id !== undefined
        ? { id: { case: "operationId", value: q.operation_id }, limit: 20 }
        : { id: { case: "merchantOperationId", value: q.merchant_operation_id! }, limit: 20 },
      opts,
    );
    const operations = [];
    for (const f of found.operations) {
      const operationId = f.operation!.operationId;
      const [deliveries, facts] = await Promise.all([
        clients.webhooks.listDeliveries({ shopId: f.shopId, limit: 100, operationId }, opts),
        clients.providerFacts
          ? clients.providerFacts.listProviderFacts({ operationId, limit: 100 }, opts)
          : Promise.resolve({ providerFacts: [] }),
      ]);
      operations.push({
        shop_id: f.shopId,
        merchant_id: f.merchantId,
        provider: f.provider ?? null,
        operation: operationJson(f.operation!) as z.infer<typeof OperationSchema>,
        legs: f.legs.map((l) => ({
          id: l.id,
          provider: l.provider,
          provider_leg_id: l.providerLegId,
          amount: l.amount,
          completed_at: l.completedAt,
          receipt_id: l.receiptId ?? null,
        })),
        receipts: f.receipts.map((r) => ({ id: r.id, amount: r.amount, completed_at: r.completedAt })),
        provider_facts: facts.providerFacts.map(providerFactJson),
        webhook_deliveries: deliveries.deliveries.map(deliveryJson),
      });
    }
    return c.json({ operations }, 200);
  });
}
