import type { AddressInfo } from "node:net";
import { createLogger } from "@gw/log";
import { startMetricsServer } from "@gw/rpc";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { CheckoutConfig } from "./config.ts";

/**
 * The hosted page carries a credential in its URL (`k`), so the page must never leak
 * it: no referrer, no framing, no third-party resource of any kind, nothing cached.
 */
const CSP = "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const NOT_FOUND_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Payment not found</title></head>
<body>
<h1>Payment not found</h1>
<p>This payment link is not valid or has expired.</p>
</body>
</html>
`;

/** Builds the checkout HTTP app without listening; tests call it through `app.request()`. */
export function buildCheckoutApp(options: { draining: () => boolean } = { draining: () => false }) {
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
  app.get("/livez", (c) => c.body(null, 204));
  app.get("/healthz", (c) => c.body(null, 204));
  app.get("/readyz", (c) => (options.draining() ? c.body(null, 503) : c.body(null, 204)));
  // The hosted page comes with a later issue; until then every payment link answers
  // the same not-found page, which never tells whether the operation exists.
  app.get("/:operation_id", (c) => c.html(NOT_FOUND_PAGE, 404));
  app.notFound((c) => c.html(NOT_FOUND_PAGE, 404));
  return app;
}

export interface RunningCheckout {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/** Starts the checkout page server and its metrics endpoint. */
export async function startCheckout(config: CheckoutConfig): Promise<RunningCheckout> {
  const logger = createLogger("checkout", config.LOG_LEVEL);
  let draining = false;
  const app = buildCheckoutApp({ draining: () => draining });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, () => resolve(s));
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
