import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@gw/log";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { createServiceClient, startMetricsServer } from "@gw/rpc";
import { closeConnectionsWithUnreadBodies } from "@gw/runtime";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import { PAGE_CSS, PAGE_JS } from "./assets.ts";
import { checkoutBodyLimits } from "./body-limits.ts";
import type { CheckoutConfig } from "./config.ts";
import { flexibleRoutes } from "./flexible-routes.ts";
import { langOf, type PageDeps, paymentRoutes } from "./payment-routes.ts";
import { notFoundPage } from "./render.ts";

/**
 * The hosted page carries a credential in its URL (`k`), so the page must never leak
 * it: no referrer, no framing, no third-party resource of any kind, nothing cached.
 * Scripts, styles and the state requests of the page come from checkout itself only.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The receipt limit of an app built without pages (probe tests): the configuration's default. */
const DEFAULT_RECEIPT_MAX_BYTES = 20 * 1024 * 1024;

/**
 * Builds the checkout HTTP app without listening; tests call it through `app.request()`.
 * Without `pages` (operations unreachable by design, as in probe tests) every payment
 * link answers the not-found page.
 */
export function buildCheckoutApp(
  options: { draining: () => boolean; pages?: PageDeps } = { draining: () => false },
) {
  const app = new Hono();
  app.use(
    secureHeaders({
      contentSecurityPolicy: undefined,
      referrerPolicy: "no-referrer",
      xFrameOptions: "DENY",
      crossOriginResourcePolicy: "same-origin",
    }),
  );
  app.use(async (c, next) => {
    await next();
    c.header("Content-Security-Policy", CSP);
    c.header("Cache-Control", "no-store");
  });
  // Every route's body limit, before any handler or link lookup reads a byte.
  app.use(checkoutBodyLimits(options.pages?.receiptMaxBytes ?? DEFAULT_RECEIPT_MAX_BYTES));
  app.get("/livez", (c) => c.body(null, 204));
  app.get("/healthz", (c) => c.body(null, 204));
  app.get("/readyz", (c) => (options.draining() ? c.body(null, 503) : c.body(null, 204)));
  app.get("/assets/page.css", (c) => c.body(PAGE_CSS, 200, { "content-type": "text/css; charset=utf-8" }));
  app.get("/assets/page.js", (c) =>
    c.body(PAGE_JS, 200, { "content-type": "text/javascript; charset=utf-8" }),
  );
  if (options.pages) {
    app.route("/", paymentRoutes(options.pages));
    app.route("/", flexibleRoutes(options.pages));
  }
  app.notFound((c) => c.html(notFoundPage(langOf(c)), 404));
  return app;
}

export interface RunningCheckout {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/**
 * Starts the checkout page server and its metrics endpoint. `overrides.operations` is for
 * tests that meet the HTTP server with a stand-in of operations.
 */
export async function startCheckout(
  config: CheckoutConfig,
  overrides: { operations?: PageDeps["operations"] } = {},
): Promise<RunningCheckout> {
  const logger = createLogger("checkout", config.LOG_LEVEL);
  let draining = false;
  const operations = overrides.operations ?? createServiceClient(OperationsService, config.OPERATIONS_URL);
  const app = buildCheckoutApp({
    draining: () => draining,
    pages: { operations, logger, receiptMaxBytes: config.RECEIPT_STORE_MAX_BYTES },
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = closeConnectionsWithUnreadBodies(
      serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, () => resolve(s)) as Server,
    );
  });
  const metrics = await startMetricsServer(config.METRICS_PORT, config.HOST);
  const port = (server.address() as AddressInfo).port;
  const metricsPort = (metrics.address() as AddressInfo).port;
  logger.info({ port, metricsPort }, "checkout listening");
  let stopping: Promise<void> | undefined;
  return {
    port,
    metricsPort,
    stop() {
      stopping ??= (async () => {
        draining = true;
        await new Promise((r) => server.close(r));
        await new Promise((r) => metrics.close(r));
        logger.info("checkout stopped");
      })();
      return stopping;
    },
  };
}
