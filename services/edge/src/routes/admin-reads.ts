import { METHODS } from "@gw/money";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { errorResponses, jsonResponse, openApiApp } from "../schemas.ts";

/**
 * Admin reads of the configuration the admin API writes: providers (never their
 * credentials), a shop's routes (operations) and a shop's pricing (ledger), so the
 * back office can show the current values beside its forms.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: configuration"];
const methods = Object.keys(METHODS);

const shopId = z.string().openapi({ param: { name: "shop_id", in: "path" }, format: "uuid" });

const ProviderSchema = z
  .object({
    name: z.string().openapi({ example: "sandbox" }),
    kind: z.string().openapi({ description: "Connector kind.", example: "sandbox" }),
    base_url: z.string().openapi({ format: "uri" }),
    methods: z.array(z.string().openapi({ enum: methods })),
    updated_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Provider", { description: "A registered provider. Its credentials are never returned." });

const RouteSchema = z
  .object({
    method: z.string().openapi({ enum: methods }),
    payin: z.array(z.string()).openapi({ description: "Provider names in the order they are tried." }),
    payout: z.array(z.string()),
    settlement_currency: z.string().openapi({ example: "RUB" }),
    updated_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Route");

const TierSchema = z
  .object({
    min_amount: z.string().openapi({ example: "100" }),
    max_amount: z.string().openapi({ example: "100000" }),
    percent: z.string().openapi({ example: "2.5" }),
    fixed: z.string().openapi({ example: "0" }),
  })
  .openapi("PricingTier");

const MethodPricingSchema = z
  .object({
    method: z.string().openapi({ enum: methods }),
    payin: z.array(TierSchema),
    payout: z.array(TierSchema),
  })
  .openapi("MethodPricing");

const routes = {
  providers: createRoute({
    method: "get",
    path: "/providers",
    tags,
    security,
    summary: "Every registered provider, by name (never its credentials)",
    responses: {
      200: jsonResponse(z.object({ providers: z.array(ProviderSchema) }), "The providers."),
      ...errorResponses(401, 503),
    },
  }),
  routes: createRoute({
    method: "get",
    path: "/shops/{shop_id}/routes",
    tags,
    security,
    summary: "The shop's routes, one per configured method",
    request: { params: z.object({ shop_id: shopId }) },
    responses: {
      200: jsonResponse(z.object({ routes: z.array(RouteSchema) }), "Methods without a route are absent."),
      ...errorResponses(401, 404, 503),
    },
  }),
  pricing: createRoute({
    method: "get",
    path: "/shops/{shop_id}/pricing",
    tags,
    security,
    summary: "The shop's pricing tiers per method, both directions, by min_amount",
    request: { params: z.object({ shop_id: shopId }) },
    responses: {
      200: jsonResponse(
        z.object({ pricing: z.array(MethodPricingSchema) }),
        "Methods without a tier are absent.",
      ),
      ...errorResponses(401, 404, 503),
    },
  }),
};

const tierJson = (t: { minAmount: string; maxAmount: string; percent: string; fixed: string }) => ({
  min_amount: t.minAmount,
  max_amount: t.maxAmount,
  percent: t.percent,
  fixed: t.fixed,
});

/** `GET /admin/v1/providers`, `/shops/{id}/routes`, `/shops/{id}/pricing`. */
export function adminReadRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS };
  return openApiApp()
    .openapi(routes.providers, async (c) => {
      const res = await clients.operations.listProviders({}, opts);
      return c.json(
        {
          providers: res.providers.map((p) => ({
            name: p.name,
            kind: p.kind,
            base_url: p.baseUrl,
            methods: p.methods,
            updated_at: p.updatedAt,
          })),
        },
        200,
      );
    })
    .openapi(routes.routes, async (c) => {
      const res = await clients.operations.listRoutes({ shopId: c.req.valid("param").shop_id }, opts);
      return c.json(
        {
          routes: res.routes.map((r) => ({
            method: r.method,
            payin: r.payin,
            payout: r.payout,
            settlement_currency: r.settlementCurrency,
            updated_at: r.updatedAt,
          })),
        },
        200,
      );
    })
    .openapi(routes.pricing, async (c) => {
      const res = await clients.ledger.listPricing({ shopId: c.req.valid("param").shop_id }, opts);
      return c.json(
        {
          pricing: res.methods.map((m) => ({
            method: m.method,
            payin: m.payin.map(tierJson),
            payout: m.payout.map(tierJson),
          })),
        },
        200,
      );
    });
}
