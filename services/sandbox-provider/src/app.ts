import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { connect, type Database, migrateSchema, type Sql } from "@gw/db";
import { createLogger, type Logger } from "@gw/log";
import { startMetricsServer } from "@gw/rpc";
import { bodyLimit, closeConnectionsWithUnreadBodies } from "@gw/runtime";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { CallbackSender } from "./callbacks.ts";
import type { SandboxConfig } from "./config.ts";
import { configSchema } from "./config.ts";
import { controlApi } from "./control-api.ts";
import { ApiError, errorResponse } from "./errors.ts";
import { HeldRequests, providerApi } from "./provider-api.ts";

export type { SandboxConfig } from "./config.ts";
export { configSchema };

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

export interface RunningSandbox {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

interface AppDeps {
  config: SandboxConfig;
  logger: Logger;
  sql: Sql;
  db: Database;
  sender: CallbackSender;
  held: HeldRequests;
}

/** Provider and control API bodies: small JSON documents. */
export const JSON_BODY_LIMIT_BYTES = 64 * 1024;
/** Every other route (probes, unknown paths). */
export const OTHER_BODY_LIMIT_BYTES = 16 * 1024;

/** The HTTP surface without a listener: probes, the provider API and the control API. */
export function buildApp(deps: AppDeps) {
  const app = new Hono();
  // Every route's body limit (the shared middleware), before any handler reads a byte.
  app.use(
    bodyLimit({
      routes: [
        { path: "/providers/*", maxBytes: JSON_BODY_LIMIT_BYTES },
        { path: "/control/*", maxBytes: JSON_BODY_LIMIT_BYTES },
      ],
      otherwise: OTHER_BODY_LIMIT_BYTES,
      tooLarge: (c, maxBytes) =>
        errorResponse(c, new ApiError(413, "payload_too_large", `request body exceeds ${maxBytes} bytes`)),
    }),
  );
  app.use(async (c, next) => {
    await next();
    // While stopping, every answer (the released held ones above all) closes its
    // connection, so the server's close does not wait for idle keep-alive sockets.
    if (deps.held.stopping) c.header("connection", "close");
  });
  app.get("/livez", (c) => c.body(null, 204));
  app.get("/readyz", async (c) => {
    try {
      await deps.sql`select 1`;
      return c.body(null, 204);
    } catch {
      return c.body(null, 503);
    }
  });
  app.route(
    "/providers",
    providerApi({
      db: deps.db,
      sql: deps.sql,
      sender: deps.sender,
      held: deps.held,
      noAnswerMaxMs: deps.config.NO_ANSWER_MAX_MS,
    }),
  );
  app.route(
    "/control",
    controlApi({ db: deps.db, sql: deps.sql, sender: deps.sender, controlToken: deps.config.CONTROL_TOKEN }),
  );
  app.notFound((c) => c.json({ error: { code: "not_found", message: "no such route" } }, 404));
  app.onError((err, c) => {
    if (err instanceof ApiError) return errorResponse(c, err);
    deps.logger.error({ err, path: c.req.path }, "request failed");
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  return app;
}

/**
 * Builds and starts the sandbox provider; `main.ts` and the tests both call this. Applies
 * the migrations of schema `sandbox` first, then serves HTTP and metrics and starts the
 * callback retry worker. `stop()` releases held requests, stops taking calls, lets the
 * worker finish its pass and closes the pool.
 */
/**
 * One sandbox process's app on `databaseUrl` with no listener and no callback worker, for
 * tests and benches that call it in process (`onStatement` sees every statement it sends).
 */
export function inProcessApp(
  databaseUrl: string,
  options: { max?: number; onStatement?: (query: string) => void } = {},
) {
  const { sql, db } = connect(databaseUrl, options);
  const config = configSchema.parse({ DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" });
  const logger = createLogger("sandbox-in-process", "silent");
  const app = buildApp({
    config,
    logger,
    sql,
    db,
    sender: new CallbackSender(sql, config, logger),
    held: new HeldRequests(),
  });
  return { app, sql, db };
}

export async function startSandbox(config: SandboxConfig): Promise<RunningSandbox> {
  const logger = createLogger("sandbox-provider", config.LOG_LEVEL);
  const { sql, db } = connect(config.DATABASE_URL, {
    max: config.DB_POOL_MAX,
    application: "sandbox-provider",
  });
  await migrateSchema(sql, db, "sandbox", migrationsFolder);
  const sender = new CallbackSender(sql, config, logger);
  const held = new HeldRequests();
  const app = buildApp({ config, logger, sql, db, sender, held });

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = closeConnectionsWithUnreadBodies(
      serve({ fetch: app.fetch, port: config.HTTP_PORT, hostname: config.HOST }, () => resolve(s)) as Server,
    );
  });
  const metrics = await startMetricsServer(config.METRICS_PORT, config.HOST);
  sender.start();
  const port = (server.address() as AddressInfo).port;
  const metricsPort = (metrics.address() as AddressInfo).port;
  logger.info({ port, metricsPort }, "sandbox-provider listening");

  let stopping: Promise<void> | undefined;
  return {
    port,
    metricsPort,
    stop() {
      stopping ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        held.releaseAll();
        await closed;
        await sender.stop();
        await sql.end({ timeout: 5 });
        await new Promise((r) => metrics.close(r));
        logger.info("sandbox-provider stopped");
      })();
      return stopping;
    },
  };
}
