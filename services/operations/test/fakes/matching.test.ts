import { connect, type Sql } from "@gw/db";
import { startMatching } from "@gw/matching";
import { configSchema as matchingConfig } from "@gw/matching/config";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { createServiceClient } from "@gw/rpc";
import { afterAll, beforeAll } from "vitest";
import { describeMatchingContract } from "./matching.contract.ts";
import { realService } from "./real-service.ts";

// The real matching service, on a database of its own: the reference `FakeMatching` (matching.unit.test.ts) is held to.
const matching = realService((env) => startMatching(matchingConfig.parse(env)), {
  // The sweep hands ended windows off; no test here waits for it.
  POOL_SWEEP_INTERVAL_MS: "60000",
});
let sql: Sql;

beforeAll(() => {
  ({ sql } = connect(matching.databaseUrl, { max: 1, application: "matching-contract" }));
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

// Each test starts on an empty pool, as with a new fake: the pool is shared by every shop of a method.
describeMatchingContract("the matching service", async () => {
  await sql`truncate matching.contributions, matching.slots, matching.payin_generations, matching.pool_payouts`;
  return createServiceClient(MatchingService, matching.url);
});
