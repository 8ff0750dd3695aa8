import { randomBytes } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import type { RunningService } from "@gw/runtime";
import { afterAll, beforeAll } from "vitest";

/**
 * The real service a fake is held to (its `*.contract.ts`), on a database of its own for
 * the file: started before its tests, stopped and dropped after them. `start` gets the
 * settings every service takes (database, events prefix, free ports, log level, a small
 * pool) with `extra` over them.
 */
export function realService(
  start: (env: Record<string, string>) => Promise<RunningService>,
  extra: Record<string, string> = {},
): { readonly url: string; readonly databaseUrl: string } {
  let database: TestDatabase | undefined;
  let service: RunningService | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    service = await start({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
      DB_POOL_MAX: "3",
      ...extra,
    });
  });
  afterAll(async () => {
    await service?.stop();
    await database?.drop();
  });
  return {
    get url() {
      if (!service) throw new Error("realService: not started (use it inside a test)");
      return `http://127.0.0.1:${service.port}`;
    },
    get databaseUrl() {
      if (!database) throw new Error("realService: not started (use it inside a test)");
      return database.url;
    },
  };
}
