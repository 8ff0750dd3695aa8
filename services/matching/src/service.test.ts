import { randomBytes, randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMatching } from "./app.ts";
import { configSchema } from "./config.ts";
import { payoutMother } from "./test-support.ts";

let database: TestDatabase;
let service: RunningService;

beforeAll(async () => {
  database = await createTestDatabase();
  service = await startMatching(
    configSchema.parse({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
      POOL_SWEEP_INTERVAL_MS: "50",
    }),
  );
});
afterAll(async () => {
  await service?.stop();
  await database?.drop();
});

describe("the matching service over gRPC", () => {
  it("completes a pool payout from two payins and publishes its completion", async () => {
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${service.port}`);
    const payout = payoutMother({ amount: "1000.00" });
    await client.addPayout(payout);
    const a = await client.admit({
      payinId: randomUUID(),
      shopId: randomUUID(),
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "600.00",
      slotLifetimeMs: 60_000n,
    });
    const b = await client.admit({
      payinId: randomUUID(),
      shopId: randomUUID(),
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "400.00",
      slotLifetimeMs: 60_000n,
    });
    expect([a.slot?.payoutId, b.slot?.payoutId]).toEqual([payout.operationId, payout.operationId]);
    await client.confirmSlot({ payinId: a.slot?.payinId ?? "", actualAmount: "600.00" });
    const done = await client.confirmSlot({ payinId: b.slot?.payinId ?? "", actualAmount: "400.00" });
    expect(done.payoutCompleted).toBe(true);
    expect(done.payout?.contributions).toHaveLength(2);

    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const deadline = Date.now() + 10_000;
      let published = 0;
      while (published === 0 && Date.now() < deadline) {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from matching.outbox
          where published_at is not null and subject like '%.matching.pool_payout.completed'`;
        published = row?.n ?? 0;
        if (published === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(published).toBe(1);
    } finally {
      await sql.end();
    }
  });

  it("releases an expired slot on its own with the background sweep", async () => {
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${service.port}`);
    const payout = payoutMother({ amount: "500.00" });
    await client.addPayout(payout);
    const { slot } = await client.admit({
      payinId: randomUUID(),
      shopId: randomUUID(),
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "500.00",
      slotLifetimeMs: 1000n,
    });
    const deadline = Date.now() + 10_000;
    let free = "0.00";
    while (free !== "500.00" && Date.now() < deadline) {
      free = (await client.getPoolPayout({ operationId: payout.operationId })).payout?.freeAmount ?? "";
      if (free !== "500.00") await new Promise((r) => setTimeout(r, 100));
    }
    expect(free).toBe("500.00");
    const after = await client.admit({
      payinId: slot?.payinId ?? "",
      shopId: randomUUID(),
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "500.00",
      slotLifetimeMs: 1000n,
    });
    expect(after.created).toBe(false);
    expect(after.slot).toMatchObject({ status: "released", releaseReason: "expired" });
  });
});
