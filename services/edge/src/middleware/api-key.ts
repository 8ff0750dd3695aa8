import { addLogContext } from "@gw/log";
import { createMiddleware } from "hono/factory";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { hashApiKey, looksLikeApiKey } from "../keys.ts";
import type { EdgeStore } from "../store.ts";

/**
 * Authenticates every `/v1` request by its `X-API-Key` before anything reads the body,
 * and puts the key's scope (merchant and shop) into the context. The lookup is the
 * replica's key cache or one indexed query (`EdgeStore.scopeOfKey`); either way a revoked
 * key is refused by the very next request on every replica.
 */
export const apiKeyAuth = (store: EdgeStore) =>
  createMiddleware<EdgeEnv>(async (c, next) => {
    const key = c.req.header("x-api-key");
    if (key === undefined || key === "") {
      throw new ApiError(401, "api_key_required", "the x-api-key header is required");
    }
    const scope = looksLikeApiKey(key) ? await store.scopeOfKey(hashApiKey(key)) : undefined;
    if (!scope) throw new ApiError(401, "invalid_api_key", "invalid api key");
    c.set("scope", scope);
    addLogContext({ shop_id: scope.shopId });
    await next();
  });

/**
 * The optional endpoint groups a key can be restricted to (its `permissions`), the ones
 * for which the spec lists `403`: `availability` (`GET /v1/payment/availability` and
 * `POST /v1/payment/recommendations`) and `flexible_links` (`POST /v1/payment/link/flexible`).
 */
export const KEY_PERMISSIONS = ["availability", "flexible_links"] as const;
export type KeyPermission = (typeof KEY_PERMISSIONS)[number];

/**
 * `403 key_not_authorized` for a restricted key that does not list the route's group.
 * Runs after the key (401 first) and before anything else of the route: a refused call
 * takes no rate-limit token and reaches no service.
 */
export const requirePermission = (group: KeyPermission) =>
  createMiddleware<EdgeEnv>(async (c, next) => {
    const { permissions } = c.get("scope");
    if (permissions !== null && !permissions.includes(group)) {
      throw new ApiError(
        403,
        "key_not_authorized",
        `this api key is not authorized for the ${group} endpoints`,
      );
    }
    await next();
  });
