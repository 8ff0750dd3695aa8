import { inSpan, SpanKind } from "@gw/rpc";
import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import type { EdgeEnv } from "../env.ts";

/**
 * Starts the root span of every request (`<METHOD> <route pattern>`, kind SERVER) and
 * the log context (request id; the API key middleware adds the shop). Everything the
 * request does runs inside: its log lines carry `trace_id`, and its gRPC calls send the
 * span's `traceparent` downstream, whence the outbox carries it on to the consumers.
 *
 * A `traceparent` sent by the caller is ignored: the edge is the boundary of our traces,
 * and a merchant must not be able to join (or flood) them. Registered right after the
 * request id.
 */
export const traceRequests = () =>
  createMiddleware<EdgeEnv>((c, next) =>
    inSpan(
      `${c.req.method} request`,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": c.req.method, "url.path": c.req.path },
        fields: { request_id: c.get("requestId") },
      },
      async (span) => {
        await next();
        const route = routePath(c, -1) || "unmatched";
        span.updateName(`${c.req.method} ${route}`);
        span.setAttribute("http.route", route);
        span.setAttribute("http.response.status_code", c.res.status);
        span.setAttribute("gw.request_id", c.get("requestId"));
      },
    ),
  );
