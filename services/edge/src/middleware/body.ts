import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";

/** The largest JSON body the edge reads; every request the spec defines fits many times over. */
export const JSON_BODY_LIMIT_BYTES = 64 * 1024;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json\s*(;.*)?$/i;

/** Refuses bodies over `maxBytes` with 413 in the one error shape, counting streamed bodies too. */
export const limitBody = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ApiError(413, "payload_too_large", `request body exceeds ${maxBytes} bytes`);
    },
  });

/**
 * Reads a JSON body once (bounded) and puts the parsed value into `c.var.body`. A request
 * without a body gets `undefined` (the route's validation then names the first missing
 * field). A body with a content type other than JSON gets 415; unparsable JSON gets 400
 * `invalid_json`. The text stays cached on the request, so validators that read the body
 * again see the same bytes.
 */
export const jsonBody = () => {
  const limit = limitBody(JSON_BODY_LIMIT_BYTES);
  return createMiddleware<EdgeEnv>(async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || !c.req.raw.body) {
      c.set("body", undefined);
      return next();
    }
    return limit(c, async () => {
      const text = await c.req.text();
      if (text.trim() === "") {
        c.set("body", undefined);
        return next();
      }
      const contentType = c.req.header("content-type") ?? "";
      if (!JSON_MEDIA_TYPE.test(contentType)) {
        throw new ApiError(415, "unsupported_media_type", "the request body must be application/json");
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new ApiError(400, "invalid_json", "request body is not valid JSON");
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw new ApiError(400, "invalid_json", "request body must be a JSON object");
      }
      c.set("body", parsed);
      await next();
    });
  });
};
