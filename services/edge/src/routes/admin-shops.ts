import type { Delivery } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import { KEY_PERMISSIONS } from "../middleware/api-key.ts";
import { errorResponses, jsonRequest, jsonResponse, openApiApp } from "../schemas.ts";
import type { ApiKeyListing, EdgeStore } from "../store.ts";
import { freeText } from "../validation.ts";

/**
 * Admin: merchants, shops, API keys, shop settings and webhook administration. Every
 * route needs the admin bearer token (checked by the middleware in front of `/admin`).
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: accounts"];

const name = (what: string) =>
  z
    .string({ error: (i) => (i.input === undefined ? "name is required" : "name must be a string") })
    .trim()
    .min(1, { error: "name must not be empty" })
    .max(200, { error: "name must be at most 200 characters" })
    .superRefine(freeText("name", 200))
    .openapi({ description: `Display name of the ${what}.` });

const ShopParams = z.object({
  shop_id: z.string().openapi({ param: { name: "shop_id", in: "path" }, format: "uuid" }),
});

const ApiKeySchema = z
  .object({
    key_id: z.string().openapi({ format: "uuid" }),
    prefix: z.string().openapi({ example: "gw_live_Ab3x" }),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
    permissions: z
      .array(z.string().openapi({ enum: [...KEY_PERMISSIONS] }))
      .nullable()
      .openapi({ description: "A restricted key's optional endpoint groups; null: all of them." }),
  })
  .openapi("ApiKey");

const IssueKeyBody = z
  .object({
    permissions: z
      .array(z.enum(KEY_PERMISSIONS, { error: `permissions must be among ${KEY_PERMISSIONS.join(", ")}` }), {
        error: "permissions must be an array",
      })
      .optional()
      .openapi({
        description:
          "Restricts the key to these optional endpoint groups (`availability`: the availability and recommendations reads; `flexible_links`); the others answer 403. Omitted: all of them. Every key may call the other /v1 endpoints of its shop.",
      }),
  })
  .openapi("IssueApiKeyRequest");

const keyJson = (k: ApiKeyListing) => ({
  key_id: k.id,
  prefix: k.prefix,
  created_at: k.createdAt.toISOString(),
  revoked_at: k.revokedAt?.toISOString() ?? null,
  permissions: k.permissions,
});

const SettingsBody = z
  .object({
    webhook_url: z
      .url({ protocol: /^https?$/, error: "webhook_url must be an http(s) URL" })
      .optional()
      .openapi({
        description: "Forwarded to the webhooks service; the signing secret is returned when first set.",
      }),
    hosted_page_enabled: z.boolean({ error: "hosted_page_enabled must be a boolean" }).optional(),
    flexible_link_enabled: z.boolean({ error: "flexible_link_enabled must be a boolean" }).optional(),
    flexible_picker: z
      .enum(["amount", "ranges"], { error: "flexible_picker must be amount or ranges" })
      .optional()
      .openapi({
        description: "What the hosted page offers on a flexible link: one amount field or ranges.",
      }),
    display_name: z
      .string({ error: "display_name must be a string" })
      .max(100, { error: "display_name must be at most 100 characters" })
      .optional()
      .openapi({
        description:
          "Extension: the shop's name as the payer's page shows it (\"You are paying <display_name>\"). An empty string removes it.",
      }),
    return_url: z
      .union([
        z.literal(""),
        z
          .url({ protocol: /^https?$/, error: "return_url must be an http(s) URL" })
          .max(2048, { error: "return_url must be at most 2048 characters" }),
      ])
      .optional()
      .openapi({
        description:
          'Extension: the link back to the shop the payer\'s page shows ("Back to <display_name>"). An empty string removes it.',
      }),
  })
  .openapi("ShopSettingsRequest", { description: "Fields left out keep their current value." });

const SettingsSchema = z
  .object({
    shop_id: z.string(),
    hosted_page_enabled: z.boolean(),
    flexible_link_enabled: z.boolean(),
    flexible_picker: z.string(),
    webhook_url: z.string().optional().openapi({ description: "The current webhook URL, when set." }),
    display_name: z
      .string()
      .optional()
      .openapi({ description: "Extension: the shop's name for payers, when set." }),
    return_url: z
      .string()
      .optional()
      .openapi({ description: "Extension: the payer page's link back to the shop, when set." }),
    webhook_secret: z
      .string()
      .optional()
      .openapi({ description: "Only when the shop had no secret before." }),
  })
  .openapi("ShopSettings");

/** A delivery as the admin API shows it. */
export const deliveryJson = (d: Delivery) => ({
  event_id: d.eventId,
  event_type: d.eventType,
  operation_id: d.operationId,
  status: d.status as "pending" | "delivered" | "failed",
  attempts: d.attempts,
  last_status_code: d.lastStatusCode ?? null,
  last_error: d.lastError ?? null,
  created_at: d.createdAt,
  next_attempt_at: d.nextAttemptAt ?? null,
  delivered_at: d.deliveredAt ?? null,
});

export const DeliverySchema = z
  .object({
    event_id: z.string(),
    event_type: z.string(),
    operation_id: z.string(),
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    next_attempt_at: z.string().nullable(),
    delivered_at: z.string().nullable(),
  })
  .openapi("WebhookDelivery");

const routes = {
  createMerchant: createRoute({
    method: "post",
    path: "/merchants",
    tags,
    security,
    request: { body: jsonRequest(z.object({ name: name("merchant") })) },
    responses: {
      201: jsonResponse(z.object({ merchant_id: z.string() }), "Merchant created."),
      ...errorResponses(400, 401),
    },
  }),
  createShop: createRoute({
    method: "post",
    path: "/shops",
    tags,
    security,
    request: {
      body: jsonRequest(
        z.object({
          merchant_id: z.string({
            error: (i) =>
              i.input === undefined ? "merchant_id is required" : "merchant_id must be a string",
          }),
          name: name("shop"),
        }),
      ),
    },
    responses: {
      201: jsonResponse(z.object({ shop_id: z.string() }), "Shop created."),
      ...errorResponses(400, 401, 404),
    },
  }),
  issueKey: createRoute({
    method: "post",
    path: "/shops/{shop_id}/api-keys",
    tags,
    security,
    request: { params: ShopParams, body: { ...jsonRequest(IssueKeyBody), required: false } },
    responses: {
      201: jsonResponse(
        ApiKeySchema.extend({
          api_key: z.string().openapi({ description: "The plaintext key; shown only here, once." }),
        }),
        "Key issued. Store the plaintext now: only its hash is kept.",
      ),
      ...errorResponses(400, 401, 404),
    },
  }),
  listKeys: createRoute({
    method: "get",
    path: "/shops/{shop_id}/api-keys",
    tags,
    security,
    request: { params: ShopParams },
    responses: {
      200: jsonResponse(
        z.object({ api_keys: z.array(ApiKeySchema) }),
        "The shop's keys, newest first, without secrets.",
      ),
      ...errorResponses(401, 404),
    },
  }),
  revokeKey: createRoute({
    method: "post",
    path: "/api-keys/{key_id}/revoke",
    tags,
    security,
    request: {
      params: z.object({
        key_id: z.string().openapi({ param: { name: "key_id", in: "path" }, format: "uuid" }),
      }),
    },
    responses: {
      200: jsonResponse(ApiKeySchema, "Revoked (again: unchanged). The next request with the key gets 401."),
      ...errorResponses(401, 404),
    },
  }),
  getSettings: createRoute({
    method: "get",
    path: "/shops/{shop_id}/settings",
    tags,
    security,
    request: { params: ShopParams },
    responses: { 200: jsonResponse(SettingsSchema, "The shop's switches."), ...errorResponses(401, 404) },
  }),
  putSettings: createRoute({
    method: "put",
    path: "/shops/{shop_id}/settings",
    tags,
    security,
    request: { params: ShopParams, body: jsonRequest(SettingsBody) },
    responses: {
      200: jsonResponse(SettingsSchema, "Settings stored."),
      ...errorResponses(400, 401, 404, 503),
    },
  }),
  rotateSecret: createRoute({
    method: "post",
    path: "/shops/{shop_id}/webhook-secret/rotate",
    tags,
    security,
    request: { params: ShopParams },
    responses: {
      200: jsonResponse(
        z.object({ webhook_secret: z.string() }),
        "The new signing secret; the old one stops signing.",
      ),
      ...errorResponses(401, 404, 412, 503),
    },
  }),
  listDeliveries: createRoute({
    method: "get",
    path: "/shops/{shop_id}/webhooks/deliveries",
    tags,
    security,
    request: {
      params: ShopParams,
      query: z.object({
        limit: z.coerce
          .number({ error: "limit must be an integer from 1 to 200" })
          .int({ error: "limit must be an integer from 1 to 200" })
          .min(1, { error: "limit must be an integer from 1 to 200" })
          .max(200, { error: "limit must be an integer from 1 to 200" })
          .default(50),
      }),
    },
    responses: {
      200: jsonResponse(
        z.object({ deliveries: z.array(DeliverySchema) }),
        "Recent deliveries, newest first.",
      ),
      ...errorResponses(400, 401, 404, 503),
    },
  }),
  redeliver: createRoute({
    method: "post",
    path: "/shops/{shop_id}/webhooks/deliveries/{event_id}/redeliver",
    tags,
    security,
    request: {
      params: ShopParams.extend({
        event_id: z.string().openapi({ param: { name: "event_id", in: "path" }, format: "uuid" }),
      }),
    },
    responses: {
      202: jsonResponse(z.object({ ok: z.literal(true) }), "One more attempt is scheduled now."),
      ...errorResponses(401, 404, 503),
    },
  }),
};

/** The admin routes for merchants, shops, keys, settings and webhooks. */
export function adminShopRoutes(store: EdgeStore, clients: EdgeClients) {
  const app = openApiApp();

  /** The edge's own switches, the payer page's presentation (operations) and the webhook URL (webhooks). */
  const settingsJson = async (shopId: string) => {
    const opts = { timeoutMs: CALL_TIMEOUT_MS };
    const [s, page, endpoint] = await Promise.all([
      store.settings(shopId),
      clients.operations.getShopPage({ shopId }, opts),
      clients.webhooks.getEndpoint({ shopId }, opts),
    ]);
    return {
      shop_id: shopId,
      hosted_page_enabled: s.hostedPageEnabled,
      flexible_link_enabled: s.flexibleLinkEnabled,
      flexible_picker: s.flexiblePicker,
      ...(endpoint.url !== undefined ? { webhook_url: endpoint.url } : {}),
      ...(page.displayName !== undefined ? { display_name: page.displayName } : {}),
      ...(page.returnUrl !== undefined ? { return_url: page.returnUrl } : {}),
    };
  };

  return app
    .openapi(routes.createMerchant, async (c) => {
      const merchantId = await store.createMerchant(c.req.valid("json").name);
      return c.json({ merchant_id: merchantId }, 201);
    })
    .openapi(routes.createShop, async (c) => {
      const body = c.req.valid("json");
      const shopId = await store.createShop(body.merchant_id, body.name);
      if (!shopId) throw new ApiError(404, "not_found", "merchant not found", "merchant_id");
      return c.json({ shop_id: shopId }, 201);
    })
    .openapi(routes.issueKey, async (c) => {
      const body = c.req.valid("json") as z.infer<typeof IssueKeyBody> | undefined;
      const permissions = body?.permissions && [...new Set(body.permissions)];
      const key = await store.issueKey(c.req.valid("param").shop_id, permissions);
      return c.json(
        {
          key_id: key.keyId,
          api_key: key.plaintext,
          prefix: key.prefix,
          created_at: key.createdAt.toISOString(),
          revoked_at: null,
          permissions: key.permissions,
        },
        201,
      );
    })
    .openapi(routes.listKeys, async (c) => {
      const keys = await store.listKeys(c.req.valid("param").shop_id);
      return c.json({ api_keys: keys.map(keyJson) }, 200);
    })
    .openapi(routes.revokeKey, async (c) => {
      const key = await store.revokeKey(c.req.valid("param").key_id);
      if (!key) throw notFound("api key not found");
      return c.json(keyJson(key), 200);
    })
    .openapi(routes.getSettings, async (c) => c.json(await settingsJson(c.req.valid("param").shop_id), 200))
    .openapi(routes.putSettings, async (c) => {
      const shopId = c.req.valid("param").shop_id;
      const body = c.req.valid("json");
      // The webhook URL goes first: if the webhooks service refuses it, nothing changed
      // here either, and a retry of the whole PUT is safe.
      let secret: string | undefined;
      if (body.webhook_url !== undefined) {
        const res = await clients.webhooks.putEndpoint(
          { shopId, url: body.webhook_url },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
        secret = res.secret;
      }
      if (body.display_name !== undefined || body.return_url !== undefined)
        await clients.operations.putShopPage(
          { shopId, displayName: body.display_name, returnUrl: body.return_url },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
      const patch = {
        ...(body.hosted_page_enabled !== undefined ? { hostedPageEnabled: body.hosted_page_enabled } : {}),
        ...(body.flexible_link_enabled !== undefined
          ? { flexibleLinkEnabled: body.flexible_link_enabled }
          : {}),
        ...(body.flexible_picker !== undefined ? { flexiblePicker: body.flexible_picker } : {}),
      };
      if (Object.keys(patch).length > 0) await store.putSettings(shopId, patch);
      return c.json(
        {
          ...(await settingsJson(shopId)),
          ...(body.webhook_url !== undefined ? { webhook_url: body.webhook_url } : {}),
          ...(secret !== undefined ? { webhook_secret: secret } : {}),
        },
        200,
      );
    })
    .openapi(routes.rotateSecret, async (c) => {
      const res = await clients.webhooks.rotateSecret(
        { shopId: c.req.valid("param").shop_id },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      return c.json({ webhook_secret: res.secret }, 200);
    })
    .openapi(routes.listDeliveries, async (c) => {
      const res = await clients.webhooks.listDeliveries(
        { shopId: c.req.valid("param").shop_id, limit: c.req.valid("query").limit },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      return c.json({ deliveries: res.deliveries.map(deliveryJson) }, 200);
    })
    .openapi(routes.redeliver, async (c) => {
      const { shop_id, event_id } = c.req.valid("param");
      await clients.webhooks.redeliver(
        { shopId: shop_id, eventId: event_id },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      return c.json({ ok: true as const }, 202);
    });
}
