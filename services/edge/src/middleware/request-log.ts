import type { Logger } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { Histogram } from "prom-client";
import type { EdgeEnv } from "../env.ts";

const httpDuration = new Histogram({
  name: "http_server_duration_seconds",
  help: "Duration of HTTP requests served by the edge, by method, route pattern and status.",
  labelNames: ["method", "route", "status"],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
  registers: [metricsRegistry],
});

/**
 * Logs one JSON line per request (request id, shop id, method, path, status, duration)
 * and records its duration. The line is built only when its level is enabled; no
 * per-request child logger is made (every line logged inside a request already carries
 * its request id and shop from the log context, `traceRequests`). It names only those fields: headers, query and body never
 * reach the log, so neither API keys nor secrets in bodies can. The route label is the
 * pattern (`/admin/v1/shops/:shop_id/...`), never the concrete path, to bound cardinality.
 */
export const requestLog = (logger: Logger) =>
  createMiddleware<EdgeEnv>(async (c, next) => {
    const started = performance.now();
    await next();
    const durationMs = performance.now() - started;
    const status = c.res.status;
    const route = routePath(c, -1) || "unmatched";
    httpDuration.observe({ method: c.req.method, route, status: String(status) }, durationMs / 1000);
    const level = status >= 500 ? "warn" : "info";
    if (!logger.isLevelEnabled(level)) return;
    const line = {
      request_id: c.get("requestId"),
      shop_id: c.get("scope")?.shopId,
      method: c.req.method,
      path: c.req.path,
      status,
      duration_ms: Math.round(durationMs * 10) / 10,
    };
    logger[level](line, "request");
  });
