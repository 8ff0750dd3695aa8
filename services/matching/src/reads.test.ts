import type { Client } from "@connectrpc/connect";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PoolReads, ReadLimiter } from "./reads.ts";
import { MatchingHandlers } from "./service.ts";
import { inMemoryClient, type PoolHarness, payoutMother, seedPayouts, startPool } from "./test-support.ts";

let h: PoolHarness;
let client: Client<typeof MatchingService>;

beforeAll(async () => {
  h = await startPool();
  client = inMemoryClient(h.handlers);
});
afterAll(async () => {
  await h?.stop();
});
beforeEach(async () => {
  await h.sql`truncate matching.contributions, matching.slots, matching.pool_payouts`;
});

const base = { method: "WT_RUB_C2C", currency: "RUB", coverage: "full" };
const pairs = (intervals: { minAmount: string; maxAmount: string }[]) =>
  intervals.map((i) => [i.minAmount, i.maxAmount]);

async function addPayouts(...amounts: string[]) {
  for (const amount of amounts) await client.addPayout(payoutMother({ amount }));
}

describe("availability", () => {
  it("answers sorted, disjoint, merged intervals with the gaps a slot must leave", async () => {
    await addPayouts("1000.00", "1000.00", "350.00");
    const res = await client.availability({ ...base, minAmount: "50.00", maxAmount: "5000.00" });
    // 1000.00 takes 100.00..900.00 or exactly 1000.00; 350.00 takes 100.00..250.00 or exactly 350.00.
    expect(pairs(res.intervals)).toEqual([
      ["100.00", "900.00"],
      ["1000.00", "1000.00"],
    ]);
    expect(res).toMatchObject({ reserved: false, truncated: false, coverage: "full", method: "WT_RUB_C2C" });
    expect(Date.parse(res.evaluatedAt)).not.toBeNaN();
  });

  it("merges intervals that touch at the currency's step and clips them to the bounds", async () => {
    await addPayouts("1000.00", "1000.01");
    const res = await client.availability({ ...base, minAmount: "500.00", maxAmount: "1000.00" });
    // 1000.01 takes up to 900.01; the exact 1000.01 lies above the bound.
    expect(pairs(res.intervals)).toEqual([
      ["500.00", "900.01"],
      ["1000.00", "1000.00"],
    ]);
    const exact = await client.availability({ ...base, minAmount: "950.00", maxAmount: "2000.00" });
    expect(pairs(exact.intervals)).toEqual([["1000.00", "1000.01"]]);
  });

  it("leaves out payouts whose window has ended and the free remainder already reserved", async () => {
    await client.addPayout(
      payoutMother({ amount: "800.00", windowEndsAt: new Date(Date.now() - 1000).toISOString() }),
    );
    await addPayouts("500.00");
    await client.admit({
      payinId: crypto.randomUUID(),
      shopId: crypto.randomUUID(),
      ...base,
      amount: "500.00",
      slotLifetimeMs: 60_000n,
    });
    const res = await client.availability({ ...base, minAmount: "100.00", maxAmount: "5000.00" });
    expect(res.intervals).toEqual([]);
    expect(res.truncated).toBe(false);
  });

  it("examines 1,000 rows plus one before filtering, so ineligible rows use up the budget", async () => {
    await seedPayouts(h.sql, 1000, { first: "1000.00", step: "1.00", windowEnded: true });
    await seedPayouts(h.sql, 1, { first: "5000.00" });
    const res = await client.availability({ ...base, minAmount: "100.00", maxAmount: "9000.00" });
    expect(res).toMatchObject({ truncated: true, intervals: [] });
    await h.sql`delete from matching.pool_payouts where free_amount = 1999.00`;
    const fits = await client.availability({ ...base, minAmount: "100.00", maxAmount: "9000.00" });
    expect(fits.truncated).toBe(false);
    expect(pairs(fits.intervals)).toEqual([
      ["100.00", "4900.00"],
      ["5000.00", "5000.00"],
    ]);
  });

  it("returns at most 200 intervals, the lowest, and says it truncated", async () => {
    // Remainders below twice the minimum admit only themselves: 300 separate points.
    await seedPayouts(h.sql, 300, { first: "100.00", step: "0.02" });
    const res = await client.availability({ ...base, minAmount: "100.00", maxAmount: "1000.00" });
    expect(res.truncated).toBe(true);
    expect(res.intervals).toHaveLength(200);
    expect(res.intervals[0]?.minAmount).toBe("100.00");
    expect(res.intervals[199]?.minAmount).toBe("103.98");
  });

  it("reads nothing for coverage none and answers empty lists", async () => {
    await addPayouts("1000.00");
    const res = await client.availability({
      ...base,
      coverage: "none",
      minAmount: "100.00",
      maxAmount: "5000.00",
    });
    expect(res).toMatchObject({ coverage: "none", intervals: [], truncated: false, reserved: false });
  });

  it("refuses bounds in the wrong order and a method of another currency", async () => {
    const codes = [];
    for (const req of [
      { ...base, minAmount: "500.00", maxAmount: "100.00" },
      { ...base, currency: "USDT", minAmount: "100.00", maxAmount: "500.00" },
      { ...base, minAmount: "0.00", maxAmount: "500.00" },
    ]) {
      codes.push(await client.availability(req).catch((e: ConnectError) => [e.code, errorInfo(e)?.code]));
    }
    expect(codes).toEqual(Array(3).fill([Code.InvalidArgument, "validation_failed"]));
  });
});

describe("recommendations", () => {
  it("orders exact free remainders first, then by distance, then the lower amount", async () => {
    await addPayouts("1000.00", "1200.00", "1100.00", "2000.00");
    const res = await client.recommendations({
      ...base,
      amount: "1150.00",
      minAmount: "100.00",
      maxAmount: "5000.00",
      limit: 10,
    });
    expect(res.recommendations.map((r) => [r.amount, r.delta])).toEqual([
      ["1100.00", "-50.00"],
      ["1200.00", "50.00"],
      ["1000.00", "-150.00"],
      ["2000.00", "850.00"],
      ["1150.00", "0.00"],
    ]);
    expect(pairs(res.intervals)).toEqual([
      ["100.00", "1900.00"],
      ["2000.00", "2000.00"],
    ]);
  });

  it("answers three by default", async () => {
    await addPayouts("1000.00", "1200.00", "1100.00", "2000.00");
    const res = await client.recommendations({
      ...base,
      amount: "1150.00",
      minAmount: "100.00",
      maxAmount: "5000.00",
    });
    expect(res.recommendations).toHaveLength(3);
  });

  it("starts an amount outside the bounds at the closest bound, with deltas from the original amount", async () => {
    // 501 payouts below the lower bound, all unfit: a scan starting at the amount (50.00)
    // would spend its upper side on them and never see the fitting payouts.
    await seedPayouts(h.sql, 501, { first: "60.00", step: "0.01", windowEnded: true });
    await addPayouts("1000.00", "1200.00");
    const res = await client.recommendations({
      ...base,
      amount: "50.00",
      minAmount: "500.00",
      maxAmount: "3000.00",
    });
    expect(res.recommendations.map((r) => [r.amount, r.delta])).toEqual([
      ["1000.00", "950.00"],
      ["1200.00", "1150.00"],
      ["500.00", "450.00"],
    ]);
    expect(res.truncated).toBe(true);
    const above = await client.recommendations({
      ...base,
      amount: "9000.00",
      minAmount: "500.00",
      maxAmount: "3000.00",
      limit: 1,
    });
    expect(above.recommendations.map((r) => [r.amount, r.delta])).toEqual([["1200.00", "-7800.00"]]);
  });

  it("examines 500 rows plus one on each side before filtering", async () => {
    await seedPayouts(h.sql, 499, { first: "3000.00", step: "1.00", windowEnded: true });
    await seedPayouts(h.sql, 1, { first: "9000.00" });
    const req = { ...base, amount: "2000.00", minAmount: "2500.00", maxAmount: "9000.00", limit: 10 };
    // 499 unfit rows above and one fitting row: within the limit, so it is seen.
    const seen = await client.recommendations(req);
    expect(seen.truncated).toBe(false);
    expect(seen.recommendations[0]?.amount).toBe("9000.00");
    await seedPayouts(h.sql, 1, { first: "3500.50", windowEnded: true });
    const cut = await client.recommendations(req);
    expect(cut).toMatchObject({ truncated: true, recommendations: [], intervals: [] });
  });

  it("returns the 200 intervals nearest the amount when there are more", async () => {
    await seedPayouts(h.sql, 300, { first: "100.00", step: "0.02" });
    const res = await client.recommendations({
      ...base,
      amount: "105.00",
      minAmount: "100.00",
      maxAmount: "200.00",
    });
    expect(res.truncated).toBe(true);
    expect(res.intervals).toHaveLength(200);
    // 100.00 .. 105.98 in steps of 0.02: the 200 nearest 105.00 run from 102.00 to the top.
    expect([res.intervals[0]?.minAmount, res.intervals[199]?.maxAmount]).toEqual(["102.00", "105.98"]);
    expect(res.recommendations[0]).toEqual(expect.objectContaining({ amount: "105.00", delta: "0.00" }));
  });

  it("refuses a limit above 10", async () => {
    const err = await client
      .recommendations({ ...base, amount: "100.00", minAmount: "100.00", maxAmount: "200.00", limit: 11 })
      .catch((e: ConnectError) => e);
    expect(errorInfo(err)?.field).toBe("limit");
  });
});

describe("the read limiter and budget", () => {
  it("refuses a second read at once while one is active, and ends the first at its budget", async () => {
    const limiter = new ReadLimiter();
    const slow = inMemoryClient(new MatchingHandlers(h.store, new PoolReads(h.store, limiter, 400)));
    await addPayouts("1000.00");
    // An exclusive lock makes the first read wait inside Postgres.
    const locker = await h.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table matching.pool_payouts in access exclusive mode`;
      const first = slow.availability({ ...base, minAmount: "100.00", maxAmount: "5000.00" });
      first.catch(() => {});
      const deadline = Date.now() + 5000;
      while (!limiter.active && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      const second = await slow
        .recommendations({ ...base, amount: "500.00", minAmount: "100.00", maxAmount: "5000.00" })
        .catch((e: ConnectError) => e);
      expect(second).toBeInstanceOf(ConnectError);
      expect([(second as ConnectError).code, errorInfo(second)?.code]).toEqual([
        Code.Unavailable,
        "read_capacity_exhausted",
      ]);
      const timedOut = await first.catch((e: ConnectError) => e);
      expect([(timedOut as ConnectError).code, errorInfo(timedOut)?.code]).toEqual([
        Code.Unavailable,
        "dependency_unavailable",
      ]);
    } finally {
      await locker`rollback`;
      locker.release();
    }
    const deadline = Date.now() + 5000;
    while (limiter.active && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const after = await slow.availability({ ...base, minAmount: "100.00", maxAmount: "5000.00" });
    expect(after.intervals.length).toBeGreaterThan(0);
  });
});
