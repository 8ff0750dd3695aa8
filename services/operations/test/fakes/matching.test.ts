import { randomBytes } from "node:crypto";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { startMatching } from "@gw/matching";
import { configSchema as matchingConfig } from "@gw/matching/config";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { afterAll, beforeAll } from "vitest";
import { describeMatchingContract } from "./matching.contract.ts";

// The real matching service, on a database of its own: the reference `FakeMatching` (matching.unit.test.ts) is held to.
let database: TestDatabase;
let matching: RunningService;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  matching = await startMatching(
    matchingConfig.parse({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
      DB_POOL_MAX: "3",
      // The sweep hands ended windows off; no test here waits for it.
      POOL_SWEEP_INTERVAL_MS: "60000",
    }),
  );
  ({ sql } = connect(database.url, { max: 1, application: "matching-contract" }));
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await matching?.stop();
  await database?.drop();
});

// Each test starts on an empty pool, as with a new fake: the pool is shared by every shop of a method.
describeMatchingContract("the matching service", async () => {
  await sql`truncate matching.contributions, matching.slots, matching.payin_generations, matching.pool_payouts`;
  return createServiceClient(MatchingService, `http://127.0.0.1:${matching.port}`);
});
