import { Hono } from "hono";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * `POST /callbacks/providers/:name`: a provider's result, passed to operations unparsed
 * (raw bytes and headers), because only the provider's connector there knows how to check
 * its signature. No API key: the signature is the authentication. The body is bounded by
 * the edge's body limit (`CALLBACK_BODY_LIMIT_BYTES`).
 */
export function callbackRoutes(clients: EdgeClients) {
  return new Hono<EdgeEnv>().post("/providers/:name", async (c) => {
    const provider = c.req.param("name");
    if (!PROVIDER_NAME.test(provider)) throw new ApiError(404, "provider_not_found", "unknown provider");
    const body = new Uint8Array(await c.req.arrayBuffer());
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((value, key) => {
      headers[key] = value;
    });
    await clients.operations.handleProviderCallback(
      { provider, body, headers },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    return c.json({ ok: true });
  });
}
