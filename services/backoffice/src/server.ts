import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { connect, migrateSchema } from "@gw/db";
import { createLogger } from "@gw/log";
import { startMetricsServer } from "@gw/rpc";
import { closeConnectionsWithUnreadBodies } from "@gw/runtime";
import { serve } from "@hono/node-server";
import { adminClient } from "./admin-client.ts";
import { buildBackofficeApp } from "./app.ts";
import type { BackofficeConfig } from "./config.ts";
import { SessionStore } from "./sessions.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

export interface RunningBackoffice {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/** Migrates the `backoffice` schema, then serves the back office and its metrics. */
export async function startBackoffice(config: BackofficeConfig): Promise<RunningBackoffice> {
  const logger = createLogger("backoffice", config.LOG_LEVEL);
  const { sql, db } = connect(config.DATABASE_URL, { max: config.DB_POOL_MAX, application: "backoffice" });
  await migrateSchema(sql, db, "backoffice", migrationsFolder, { logger });
  let draining = false;
  const app = buildBackofficeApp({
    adminToken: config.ADMIN_TOKEN,
    sessions: new SessionStore(db, config.ADMIN_TOKEN, {
      ttlMs: config.SESSION_TTL_HOURS * 3600_000,
      idleMs: config.SESSION_IDLE_MINUTES * 60_000,
    }),
    admin: adminClient(config.ADMIN_API_URL, config.ADMIN_TOKEN),
    logger,
    ready: () => !draining,
  });
  const server = await new Promise<Server>((resolve) => {
    const s = closeConnectionsWithUnreadBodies(
      serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, () => resolve(s)) as Server,
    );
  });
  const metrics = await startMetricsServer(config.METRICS_PORT, config.HOST);
  const port = (server.address() as AddressInfo).port;
  const metricsPort = (metrics.address() as AddressInfo).port;
  logger.info({ port, metricsPort }, "backoffice listening");
  let stopping: Promise<void> | undefined;
  return {
    port,
    metricsPort,
    stop() {
      stopping ??= (async () => {
        draining = true;
        await new Promise((r) => server.close(r));
        await new Promise((r) => metrics.close(r));
        await sql.end({ timeout: 5 });
        logger.info("backoffice stopped");
      })();
      return stopping;
    },
  };
}
