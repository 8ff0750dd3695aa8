import type { IncomingMessage } from "node:http";
import type { Context, Next } from "hono";
import { createMiddleware } from "hono/factory";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json\s*(;.*)?$/i;

/**
 * Reads a JSON body once (bounded before this by the edge's body limit) and puts the
 * parsed value into `c.var.body`. A request
 * without a body gets `undefined` (the route's validation then names the first missing
 * field). A body with a content type other than JSON gets 415; unparsable JSON gets 400
 * `invalid_json`. The text stays cached on the request, so validators that read the body
 * again see the same bytes.
 */
export const jsonBody = () =>
  createMiddleware<EdgeEnv>(async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || !hasBody(c)) {
      c.set("body", undefined);
      return next();
    }
    // A declared length is read straight off the socket (@hono/node-server's direct
    // read), without building the web Request (0.1 to 0.3 ms of CPU a request).
    return readJson(c, next);
  });

/**
 * Whether the request has a body, from the HTTP/1.1 message itself when the request
 * came through Node's server (RFC 9112 §6.3: a body is there only with Transfer-Encoding
 * or a Content-Length), without building the web Request; from the Request otherwise (in
 * process, `app.request`).
 */
function hasBody(c: Context<EdgeEnv>): boolean {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return c.req.raw.body !== null;
  if (incoming.headers["transfer-encoding"] !== undefined) return true;
  const length = incoming.headers["content-length"];
  return length !== undefined && length !== "0";
}

async function readJson(c: Context<EdgeEnv>, next: Next) {
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
}
