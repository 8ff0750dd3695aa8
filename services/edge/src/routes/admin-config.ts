import { CURRENCIES, isCurrency, isMethod, METHODS } from "@gw/money";
import { createRoute, z } from "@hono/zod-openapi";
import { v7 as uuidv7 } from "uuid";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { BalancesSchema, errorResponses, jsonRequest, jsonResponse, openApiApp } from "../schemas.ts";
import { balanceJson } from "./balances.ts";

/**
 * Admin: providers, routes, pricing, FX rates and ledger adjustments, each passed to the
 * service that owns it. The edge checks shapes (known methods and currencies, decimal
 * text); the owning service checks the rules.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: configuration"];

const methods = Object.keys(METHODS);
const currencies = Object.keys(CURRENCIES);

const text = (field: string) =>
  z
    .string({ error: (i) => (i.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .min(1, { error: `${field} must not be empty` });

/** A non-negative decimal string such as "2.5" or "100.00". */
const decimal = (field: string) =>
  text(field).regex(/^(0|[1-9]\d{0,19})(\.\d{1,12})?$/, {
    error: `${field} must be a non-negative decimal string`,
  });

const methodParam = z
  .string()
  .refine(isMethod, { error: `method must be one of ${methods.join(", ")}` })
  .openapi({ param: { name: "method", in: "path" }, enum: methods });
const currencyParam = (name: string) =>
  z
    .string()
    .refine(isCurrency, { error: `${name} must be one of ${currencies.join(", ")}` })
    .openapi({ param: { name, in: "path" }, enum: currencies });
const shopId = z.string().openapi({ param: { name: "shop_id", in: "path" }, format: "uuid" });
const providerName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, {
    error: "name must be lowercase letters, digits, - or _ (at most 64)",
  })
  .openapi({ param: { name: "name", in: "path" }, example: "sandbox" });

const ProviderBody = z
  .object({
    kind: text("kind").openapi({ description: 'Connector kind, for example "sandbox".' }),
    base_url: z.url({ error: "base_url must be a URL" }),
    credentials: text("credentials").openapi({ description: "Shared secret; never returned or logged." }),
    methods: z
      .array(z.string().refine(isMethod, { error: `methods must be among ${methods.join(", ")}` }), {
        error: "methods must be an array of method names",
      })
      .min(1, { error: "methods must not be empty" }),
  })
  .openapi("ProviderRequest");

const providerList = (field: string) =>
  z
    .array(text(field), { error: `${field} must be an array of provider names` })
    .openapi({ description: "Provider names in the order they are tried." });

const RouteBody = z
  .object({
    payin: providerList("payin").default([]),
    payout: providerList("payout").default([]),
    settlement_currency: z
      .string({ error: "settlement_currency is required" })
      .refine(isCurrency, { error: `settlement_currency must be one of ${currencies.join(", ")}` }),
  })
  .openapi("RouteRequest");

const Tier = z.object({
  min_amount: decimal("min_amount"),
  max_amount: decimal("max_amount"),
  percent: decimal("percent").openapi({ description: 'Percent of the amount, for example "2.5".' }),
  fixed: decimal("fixed").openapi({ description: "Fixed fee in settlement currency." }),
});

const PricingBody = z
  .object({
    payin: z.array(Tier, { error: "payin must be an array of tiers" }).default([]),
    payout: z.array(Tier, { error: "payout must be an array of tiers" }).default([]),
  })
  .openapi("PricingRequest");

const FxBody = z
  .object({
    rate: decimal("rate").refine((r) => !/^0(\.0*)?$/.test(r), { error: "rate must be greater than 0" }),
    source: text("source"),
  })
  .openapi("FxRateRequest");

const AdjustmentBody = z
  .object({
    currency: z
      .string({ error: "currency is required" })
      .refine(isCurrency, { error: `currency must be one of ${currencies.join(", ")}` }),
    amount: text("amount")
      .regex(/^-?(0|[1-9]\d{0,19})(\.\d{1,6})?$/, { error: "amount must be a signed decimal string" })
      .refine((a) => !/^-?0(\.0*)?$/.test(a), { error: "amount must not be zero" })
      .openapi({ description: "Positive credits the shop, negative debits it.", example: "-150.00" }),
    reason: text("reason"),
    adjustment_id: z
      .uuid({ error: "adjustment_id must be a UUID" })
      .optional()
      .openapi({ description: "Idempotency key; a new one is issued when left out." }),
  })
  .superRefine((body, ctx) => {
    if (!isCurrency(body.currency)) return;
    const scale = body.amount.split(".")[1]?.length ?? 0;
    if (scale > CURRENCIES[body.currency].scale) {
      ctx.addIssue({
        code: "custom",
        path: ["amount"],
        message: `amount has more than ${CURRENCIES[body.currency].scale} decimal places for ${body.currency}`,
      });
    }
  })
  .openapi("AdjustmentRequest");

const ok = jsonResponse(z.object({ ok: z.literal(true) }), "Stored.");

const routes = {
  putProvider: createRoute({
    method: "put",
    path: "/providers/{name}",
    tags,
    security,
    request: { params: z.object({ name: providerName }), body: jsonRequest(ProviderBody) },
    responses: { 200: ok, ...errorResponses(400, 401, 503) },
  }),
  putRoute: createRoute({
    method: "put",
    path: "/shops/{shop_id}/routes/{method}",
    tags,
    security,
    request: { params: z.object({ shop_id: shopId, method: methodParam }), body: jsonRequest(RouteBody) },
    responses: { 200: ok, ...errorResponses(400, 401, 404, 412, 503) },
  }),
  putPricing: createRoute({
    method: "put",
    path: "/shops/{shop_id}/pricing/{method}",
    tags,
    security,
    request: { params: z.object({ shop_id: shopId, method: methodParam }), body: jsonRequest(PricingBody) },
    responses: { 200: ok, ...errorResponses(400, 401, 404, 503) },
  }),
  putFxRate: createRoute({
    method: "put",
    path: "/fx/rates/{from}/{to}",
    tags,
    security,
    request: {
      params: z.object({ from: currencyParam("from"), to: currencyParam("to") }),
      body: jsonRequest(FxBody),
    },
    responses: { 200: ok, ...errorResponses(400, 401, 503) },
  }),
  postAdjustment: createRoute({
    method: "post",
    path: "/shops/{shop_id}/ledger/adjustments",
    tags,
    security,
    request: { params: z.object({ shop_id: shopId }), body: jsonRequest(AdjustmentBody) },
    responses: {
      201: jsonResponse(z.object({ transfer_id: z.string(), adjustment_id: z.string() }), "Posted."),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  }),
  balances: createRoute({
    method: "get",
    path: "/shops/{shop_id}/balances",
    tags,
    security,
    request: { params: z.object({ shop_id: shopId }) },
    responses: {
      200: jsonResponse(BalancesSchema, "One row per supported currency."),
      ...errorResponses(401, 404, 500, 503),
    },
  }),
};

/** The admin routes that configure the other services. */
export function adminConfigRoutes(clients: EdgeClients) {
  const app = openApiApp();
  const opts = { timeoutMs: CALL_TIMEOUT_MS };

  return app
    .openapi(routes.putProvider, async (c) => {
      const body = c.req.valid("json");
      await clients.operations.putProvider(
        {
          name: c.req.valid("param").name,
          kind: body.kind,
          baseUrl: body.base_url,
          credentials: body.credentials,
          methods: body.methods,
        },
        opts,
      );
      return c.json({ ok: true as const }, 200);
    })
    .openapi(routes.putRoute, async (c) => {
      const { shop_id, method } = c.req.valid("param");
      const body = c.req.valid("json");
      await clients.operations.putRoute(
        {
          shopId: shop_id,
          method,
          payin: body.payin,
          payout: body.payout,
          settlementCurrency: body.settlement_currency,
        },
        opts,
      );
      return c.json({ ok: true as const }, 200);
    })
    .openapi(routes.putPricing, async (c) => {
      const { shop_id, method } = c.req.valid("param");
      const body = c.req.valid("json");
      const tier = (t: z.infer<typeof Tier>) => ({
        minAmount: t.min_amount,
        maxAmount: t.max_amount,
        percent: t.percent,
        fixed: t.fixed,
      });
      await clients.ledger.putPricing(
        { shopId: shop_id, method, payin: body.payin.map(tier), payout: body.payout.map(tier) },
        opts,
      );
      return c.json({ ok: true as const }, 200);
    })
    .openapi(routes.putFxRate, async (c) => {
      const { from, to } = c.req.valid("param");
      const body = c.req.valid("json");
      await clients.ledger.putFxRate({ from, to, rate: body.rate, source: body.source }, opts);
      return c.json({ ok: true as const }, 200);
    })
    .openapi(routes.postAdjustment, async (c) => {
      const body = c.req.valid("json");
      const adjustmentId = body.adjustment_id ?? uuidv7();
      const res = await clients.ledger.postAdjustment(
        {
          shopId: c.req.valid("param").shop_id,
          currency: body.currency,
          amount: body.amount,
          reason: body.reason,
          adjustmentId,
        },
        opts,
      );
      return c.json({ transfer_id: res.transferId, adjustment_id: adjustmentId }, 201);
    })
    .openapi(routes.balances, async (c) => {
      const res = await clients.ledger.getBalances({ shopId: c.req.valid("param").shop_id }, opts);
      return c.json({ balances: res.balances.map(balanceJson) }, 200);
    });
}
