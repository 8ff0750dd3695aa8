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

  it("keeps a slot past its expires_at with the background sweep running, and hands its payout off once the slot is released", async () => {
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${service.port}`);
    const payout = payoutMother({ amount: "500.00", windowEndsAt: new Date(Date.now() + 500).toISOString() });
    await client.addPayout(payout);
    const { slot } = await client.admit({
      payinId: randomUUID(),
      shopId: randomUUID(),
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "500.00",
      slotLifetimeMs: 1000n,
    });
    // Many sweeps pass the slot's expiry and the window's end: the payin may still be paid.
    await new Promise((r) => setTimeout(r, 2_000));
    const held = await client.getPoolPayout({ operationId: payout.operationId });
    expect(held.payout).toMatchObject({ status: "open", reservedAmount: "500.00" });
    const released = await client.releaseSlot({ payinId: slot?.payinId ?? "", reason: "expired" });
    expect(released.slot).toMatchObject({ status: "released", releaseReason: "expired" });
    const deadline = Date.now() + 10_000;
    let status = "open";
    while (status === "open" && Date.now() < deadline) {
      status = (await client.getPoolPayout({ operationId: payout.operationId })).payout?.status ?? "";
      if (status === "open") await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe("handed_off");
  });
});
