import type { ProviderFact } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { errorResponses, jsonRequest, jsonResponse, openApiApp } from "../schemas.ts";
import { freeText } from "../validation.ts";

/** The operator's resolutions (operations' `RESOLUTIONS`): two for money in, two for money out. */
const RESOLUTIONS = ["credit_shop", "return_to_payer", "debit_shop", "write_off"] as const;

/**
 * Admin: provider facts, the money providers moved that the gateway did not expect (a
 * completion after a cancel, a rejection or an expiry; a result from a provider that does
 * not hold the route; a pool completion its slot could not take). Each is booked on a
 * suspense account until an operator credits the shop or returns it to the payer.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: provider facts"];

const text = (field: string, max: number) =>
  z
    .string({ error: (i) => (i.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .trim()
    .min(1, { error: `${field} must not be empty` })
    .max(max, { error: `${field} must be at most ${max} characters` })
    .superRefine(freeText(field, max));

export const ProviderFactJson = z
  .object({
    id: z.string().openapi({ format: "uuid" }),
    operation_id: z
      .string()
      .nullable()
      .openapi({ description: "The operation the provider named, if known." }),
    shop_id: z.string().nullable(),
    provider: z.string(),
    kind: z.enum(["late_completion", "not_routed", "slot_refused", "amount_mismatch"]),
    provider_status: z.string().openapi({ example: "completed" }),
    direction: z.enum(["payin", "payout"]).openapi({
      description:
        "Which way the money moved: `payin` (came in; `credit_shop` or `return_to_payer`) or `payout` (went out; `debit_shop` or `write_off`).",
    }),
    amount: z.string().nullable().openapi({
      example: "1000.00",
      description: "Null when the provider did not say how much: nothing is booked for it.",
    }),
    currency: z.string().nullable().openapi({
      example: "RUB",
      description: "Null when neither the operation nor the provider's configuration says it.",
    }),
    status: z.enum(["open", "resolved"]),
    resolution: z
      .object({
        action: z.enum(RESOLUTIONS),
        reason: z.string(),
        resolved_at: z.string(),
      })
      .nullable(),
    created_at: z.string(),
  })
  .openapi("ProviderFact");

type ProviderFactJson = z.infer<typeof ProviderFactJson>;

/** The admin JSON of a fact; the operator's name stays in the audit record, not in the list. */
export function providerFactJson(f: ProviderFact): ProviderFactJson {
  return {
    id: f.id,
    operation_id: f.operationId ?? null,
    shop_id: f.shopId ?? null,
    provider: f.provider,
    kind: f.kind as ProviderFactJson["kind"],
    provider_status: f.providerStatus,
    direction: f.direction === "payout" ? "payout" : "payin",
    amount: f.amount || null,
    currency: f.currency || null,
    status: f.status as ProviderFactJson["status"],
    resolution: f.resolution
      ? {
          action: f.resolution.action as (typeof RESOLUTIONS)[number],
          reason: f.resolution.reason,
          resolved_at: f.resolution.resolvedAt,
        }
      : null,
    created_at: f.createdAt,
  };
}

const routes = {
  list: createRoute({
    method: "get",
    path: "/provider-facts",
    tags,
    security,
    summary: "Provider facts: money a provider moved that the gateway did not expect, open ones first",
    request: {
      query: z.object({
        status: z.enum(["open", "resolved"], { error: "status must be open or resolved" }).optional(),
        limit: z.coerce
          .number({ error: "limit must be a number" })
          .int({ error: "limit must be an integer" })
          .min(1, { error: "limit must be 1..500" })
          .max(500, { error: "limit must be 1..500" })
          .default(100),
      }),
    },
    responses: {
      200: jsonResponse(z.object({ provider_facts: z.array(ProviderFactJson) }), "The review queue."),
      ...errorResponses(400, 401, 503),
    },
  }),
  resolve: createRoute({
    method: "post",
    path: "/provider-facts/{id}/resolve",
    tags,
    security,
    summary: "Settle a provider fact: credit or charge the shop, return it to the payer, or write it off",
    description:
      "Booked once, out of the suspense account. Money that came in (`direction: payin`): " +
      "`credit_shop` credits the shop's balance less the commission its pricing takes from a payment " +
      "of that amount; `return_to_payer` moves it to the liability of returning it. Money that went " +
      "out (`direction: payout`): `debit_shop` charges the shop's balance with it plus the commission " +
      "as for a payout of that amount; `write_off` books it as the gateway's loss. The operation's " +
      "status does not change. The same action again answers the recorded resolution " +
      "(`replayed: true`); another one is `412 provider_fact_already_resolved`; an action for the " +
      "other direction, or `credit_shop`/`debit_shop` without a known shop or pricing, is `412 " +
      "provider_fact_not_creditable`.",
    request: {
      params: z.object({
        id: z.uuid({ error: "id must be a UUID" }).openapi({ param: { name: "id", in: "path" } }),
      }),
      body: jsonRequest(
        z
          .object({
            action: z.enum(RESOLUTIONS, { error: `action must be one of ${RESOLUTIONS.join(", ")}` }),
            reason: text("reason", 2048).openapi({ description: "Why: kept in the audit record." }),
            operator: text("operator", 256).openapi({
              description: "Who decided: kept in the audit record.",
            }),
          })
          .openapi("ProviderFactResolution"),
      ),
    },
    responses: {
      200: jsonResponse(
        z.object({ provider_fact: ProviderFactJson, replayed: z.boolean() }),
        "The resolved fact.",
      ),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  }),
};

/** `GET /admin/v1/provider-facts` and `POST /admin/v1/provider-facts/{id}/resolve`. */
export function adminProviderFactRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS };
  const facts = () => {
    if (!clients.providerFacts)
      throw new ApiError(503, "dependency_unavailable", "provider facts are not reachable");
    return clients.providerFacts;
  };
  return openApiApp()
    .openapi(routes.list, async (c) => {
      const q = c.req.valid("query");
      const res = await facts().listProviderFacts({ status: q.status, limit: q.limit }, opts);
      return c.json({ provider_facts: res.providerFacts.map(providerFactJson) }, 200);
    })
    .openapi(routes.resolve, async (c) => {
      const body = c.req.valid("json");
      const res = await facts().resolveProviderFact(
        { id: c.req.valid("param").id, action: body.action, reason: body.reason, operator: body.operator },
        opts,
      );
      return c.json({ provider_fact: providerFactJson(res.providerFact!), replayed: res.replayed }, 200);
    });
}
