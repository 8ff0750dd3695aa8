import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { type MatchingService, PoolPayoutEventSchema } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admitMother, inMemoryClient, type PoolHarness, payoutMother, startPool } from "./test-support.ts";

let h: PoolHarness;
let client: Client<typeof MatchingService>;

beforeAll(async () => {
  h = await startPool();
  client = inMemoryClient(h.handlers);
});
afterAll(async () => {
  await h?.stop();
});

/** The pool is shared by every shop of a method and currency, so each test starts from an empty one. */
async function clearPool() {
  await h.sql`truncate matching.contributions, matching.slots, matching.payin_generations, matching.pool_payouts, matching.outbox`;
}

async function refusalOf(promise: Promise<unknown>): Promise<{ code: Code; publicCode: string | undefined }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ConnectError) return { code: err.code, publicCode: errorInfo(err)?.code };
    throw err;
  }
  throw new Error("expected the call to fail");
}

async function addPayout(amount: string, overrides: Parameters<typeof payoutMother>[0] = {}) {
  const res = await client.addPayout(payoutMother({ amount, ...overrides }));
  if (!res.payout) throw new Error("no payout in the answer");
  return res.payout;
}

describe("adding payouts", () => {
  it("puts a payout into the pool with a free remainder equal to its amount", async () => {
    await clearPool();
    const payout = await addPayout("1500.00");
    expect(payout).toMatchObject({ amount: "1500.00", freeAmount: "1500.00", status: "open" });
    expect((await client.getPoolDepth({ method: "WT_RUB_C2C", currency: "RUB" })).freeAmount).toBe("1500.00");
  });

  it("answers the stored payout to a repeat and refuses the same id with another amount", async () => {
    const request = payoutMother({ amount: "700.00" });
    const first = await client.addPayout(request);
    const again = await client.addPayout(request);
    expect([first.created, again.created]).toEqual([true, false]);
    expect(again.payout?.operationId).toBe(first.payout?.operationId);
    const conflict = await refusalOf(client.addPayout({ ...request, amount: "701.00" }));
    expect(conflict).toEqual({ code: Code.FailedPrecondition, publicCode: "idempotency_conflict" });
  });

  it("refuses a method that does not belong to the currency", async () => {
    const bad = await refusalOf(client.addPayout(payoutMother({ currency: "USDT" })));
    expect(bad).toEqual({ code: Code.InvalidArgument, publicCode: "validation_failed" });
  });
});

describe("admission", () => {
  it("answers a slot with the payout's destination as requisites and the slot's expiry", async () => {
    await clearPool();
    const payout = await addPayout("1000.00", { number: "5555444433332222" });
    const before = Date.now();
    const res = await client.admit(admitMother("300.00", { slotLifetimeMs: 900_000n }));
    expect(res.slot).toMatchObject({
      payoutId: payout.operationId,
      amount: "300.00",
      status: "reserved",
      destination: { number: "5555444433332222", name: "IVAN PETROV" },
    });
    const expiresAt = Date.parse(res.slot?.expiresAt ?? "");
    expect(expiresAt).toBeGreaterThan(before + 800_000);
    const after = await client.getPoolPayout({ operationId: payout.operationId });
    expect(after.payout).toMatchObject({ freeAmount: "700.00", reservedAmount: "300.00" });
  });

  it("prefers the payout the amount closes exactly over a larger one and an older one", async () => {
    await clearPool();
    await addPayout("5000.00");
    await addPayout("800.00");
    const exact = await addPayout("500.00");
    const res = await client.admit(admitMother("500.00"));
    expect(res.slot?.payoutId).toBe(exact.operationId);
  });

  it("otherwise takes the payout left with the smallest remainder, the oldest on ties", async () => {
    await clearPool();
    await addPayout("5000.00");
    const older = await addPayout("900.00");
    await addPayout("900.00");
    await addPayout("650.00"); // 650 - 500 = 150 would stay, but 150 >= 100: best fit
    const res = await client.admit(admitMother("500.00"));
    const best = (await client.getPoolPayout({ operationId: res.slot?.payoutId ?? "" })).payout;
    expect(best?.amount).toBe("650.00");
    const second = await client.admit(admitMother("500.00"));
    expect(second.slot?.payoutId).toBe(older.operationId);
  });

  it("never leaves a remainder between zero and the method minimum", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    // 1000 - 950 = 50 is below the 100.00 minimum: in the gap.
    const gap = await refusalOf(client.admit(admitMother("950.00")));
    expect(gap).toEqual({ code: Code.FailedPrecondition, publicCode: "amount_unavailable" });
    await client.admit(admitMother("900.00"));
    const left = (await client.getPoolPayout({ operationId: payout.operationId })).payout;
    expect(left?.freeAmount).toBe("100.00");
  });

  it("admits an amount below the minimum only when it closes a remainder exactly", async () => {
    await clearPool();
    await addPayout("1000.00");
    expect((await refusalOf(client.admit(admitMother("50.00")))).publicCode).toBe("amount_unavailable");
    await addPayout("50.00");
    expect((await client.admit(admitMother("50.00"))).slot?.amount).toBe("50.00");
  });

  it("answers the same slot to a repeated admission of one payin", async () => {
    await clearPool();
    await addPayout("1000.00");
    await addPayout("2000.00");
    const request = admitMother("400.00");
    const first = await client.admit(request);
    const again = await client.admit(request);
    expect([first.created, again.created]).toEqual([true, false]);
    expect(again.slot?.payoutId).toBe(first.slot?.payoutId);
    const depth = await client.getPoolDepth({ method: "WT_RUB_C2C", currency: "RUB" });
    expect(depth.freeAmount).toBe("2600.00");
  });

  it("does not admit into a payout whose window has ended", async () => {
    await clearPool();
    await addPayout("1000.00", { windowEndsAt: new Date(Date.now() - 1000).toISOString() });
    expect((await refusalOf(client.admit(admitMother("1000.00")))).publicCode).toBe("amount_unavailable");
  });
});

describe("release and confirmation", () => {
  it("frees a released slot at once and answers a repeated release unchanged", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const { slot } = await client.admit(admitMother("1000.00"));
    const released = await client.releaseSlot({ payinId: slot?.payinId ?? "", reason: "cancelled" });
    expect(released.slot).toMatchObject({ status: "released", releaseReason: "cancelled" });
    const again = await client.releaseSlot({ payinId: slot?.payinId ?? "", reason: "expired" });
    expect(again.slot?.releaseReason).toBe("cancelled");
    const after = (await client.getPoolPayout({ operationId: payout.operationId })).payout;
    expect(after).toMatchObject({ freeAmount: "1000.00", reservedAmount: "0.00" });
    expect((await client.admit(admitMother("1000.00"))).slot?.payoutId).toBe(payout.operationId);
  });

  it("admits a payin afresh once its slot was released (a refused create routed again)", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const payinId = (await client.admit(admitMother("1000.00"))).slot?.payinId ?? "";
    await client.releaseSlot({ payinId, reason: "rejected" });
    const again = await client.admit(admitMother("1000.00", { payinId }));
    expect(again).toMatchObject({
      created: true,
      slot: { payinId, status: "reserved", payoutId: payout.operationId },
    });
    const after = (await client.getPoolPayout({ operationId: payout.operationId })).payout;
    expect(after).toMatchObject({ freeAmount: "0.00", reservedAmount: "1000.00" });
    // While reserved, a repeat answers the same slot.
    expect((await client.admit(admitMother("1000.00", { payinId }))).created).toBe(false);
  });

  it("refuses a late Admit of an attempt whose release came first, and admits a newer attempt", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const payinId = randomUUID();
    // The pass-over's release (generation 3) reaches matching before the Admit of the
    // attempt it withdraws (generation 2): it finds no slot and leaves a tombstone.
    expect(
      (await refusalOf(client.releaseSlot({ payinId, reason: "cancelled", generation: 3n }))).publicCode,
    ).toBe("not_found");
    const late = await refusalOf(client.admit({ ...admitMother("400.00", { payinId }), generation: 2n }));
    expect(late).toMatchObject({ code: Code.FailedPrecondition, publicCode: "slot_settled" });
    expect((await client.getPoolPayout({ operationId: payout.operationId })).payout).toMatchObject({
      freeAmount: "1000.00",
      reservedAmount: "0.00",
    });
    // A repeat of a released attempt's Admit is refused too; a retry (newer attempt) is admitted.
    const retry = await client.admit({ ...admitMother("400.00", { payinId }), generation: 5n });
    expect(retry).toMatchObject({ created: true, slot: { payinId, status: "reserved" } });
    await client.releaseSlot({ payinId, reason: "rejected", generation: 6n });
    expect(
      (await refusalOf(client.admit({ ...admitMother("400.00", { payinId }), generation: 5n }))).publicCode,
    ).toBe("slot_settled");
    // A release from an older attempt leaves a newer attempt's slot alone.
    const third = await client.admit({ ...admitMother("400.00", { payinId }), generation: 8n });
    expect(third.created).toBe(true);
    const stale = await client.releaseSlot({ payinId, reason: "cancelled", generation: 7n });
    expect(stale.slot?.status).toBe("reserved");
  });

  it("leaves no slot reserved when a release races its attempt's Admit, whichever commits first", async () => {
    await clearPool();
    const payout = await addPayout("5000.00");
    const payins = Array.from({ length: 40 }, () => randomUUID());
    await Promise.all(
      payins.map((payinId, i) => {
        const admit = client
          .admit({ ...admitMother("100.00", { payinId }), generation: 4n })
          .catch(() => undefined);
        const release = client
          .releaseSlot({ payinId, reason: "cancelled", generation: 5n })
          .catch(() => undefined);
        return i % 2 === 0 ? Promise.all([admit, release]) : Promise.all([release, admit]);
      }),
    );
    const rows = await h.sql<{ n: number }[]>`
      select count(*)::int as n from matching.slots where status = 'reserved'`;
    expect(rows[0]?.n).toBe(0);
    expect((await client.getPoolPayout({ operationId: payout.operationId })).payout).toMatchObject({
      freeAmount: "5000.00",
      reservedAmount: "0.00",
    });
  });

  it("refuses to release a confirmed slot and to confirm a released one", async () => {
    await clearPool();
    await addPayout("1000.00");
    const a = (await client.admit(admitMother("300.00"))).slot;
    const b = (await client.admit(admitMother("300.00"))).slot;
    await client.confirmSlot({ payinId: a?.payinId ?? "", actualAmount: "300.00" });
    await client.releaseSlot({ payinId: b?.payinId ?? "", reason: "rejected" });
    expect(
      (await refusalOf(client.releaseSlot({ payinId: a?.payinId ?? "", reason: "expired" }))).publicCode,
    ).toBe("slot_settled");
    expect(
      (await refusalOf(client.confirmSlot({ payinId: b?.payinId ?? "", actualAmount: "300.00" }))).publicCode,
    ).toBe("slot_settled");
    expect((await refusalOf(client.releaseSlot({ payinId: randomUUID(), reason: "expired" }))).code).toBe(
      Code.NotFound,
    );
  });

  it("completes a payout when its contributions reach its amount, with one item per payment", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const slots = [];
    for (const amount of ["400.00", "350.00", "250.00"])
      slots.push((await client.admit(admitMother(amount))).slot);
    const first = await client.confirmSlot({ payinId: slots[0]?.payinId ?? "", actualAmount: "400.00" });
    expect(first.payoutCompleted).toBe(false);
    expect(first.payout?.contributions).toEqual([]);
    await client.confirmSlot({ payinId: slots[1]?.payinId ?? "", actualAmount: "350.00" });
    const last = await client.confirmSlot({ payinId: slots[2]?.payinId ?? "", actualAmount: "250.00" });
    expect(last.payoutCompleted).toBe(true);
    expect(last.payout).toMatchObject({ status: "completed", paidAmount: "1000.00", freeAmount: "0.00" });
    expect(last.payout?.contributions.map((c) => c.amount).sort()).toEqual(["250.00", "350.00", "400.00"]);
    expect(new Set(last.payout?.contributions.map((c) => c.payinId))).toEqual(
      new Set(slots.map((s) => s?.payinId)),
    );
    const repeat = await client.confirmSlot({ payinId: slots[2]?.payinId ?? "", actualAmount: "250.00" });
    expect(repeat.payoutCompleted).toBe(true);
    expect(repeat.contribution?.id).toBe(last.contribution?.id);
    const [event] = await h.sql<{ subject: string; payload: Buffer }[]>`
      select subject, payload from matching.outbox`;
    expect(event?.subject).toMatch(/\.matching\.pool_payout\.completed$/);
    const decoded = fromBinary(PoolPayoutEventSchema, new Uint8Array(event?.payload ?? []));
    expect(decoded.payout?.operationId).toBe(payout.operationId);
    expect(decoded.payout?.contributions).toHaveLength(3);
  });

  it("returns a shortfall of the actual amount to the free remainder", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const { slot } = await client.admit(admitMother("600.00"));
    const res = await client.confirmSlot({ payinId: slot?.payinId ?? "", actualAmount: "550.00" });
    expect(res.contribution?.amount).toBe("550.00");
    expect(res.payout).toMatchObject({ freeAmount: "450.00", paidAmount: "550.00", reservedAmount: "0.00" });
    const conflict = await refusalOf(
      client.confirmSlot({ payinId: slot?.payinId ?? "", actualAmount: "600.00" }),
    );
    expect(conflict.publicCode).toBe("slot_settled");
    expect(
      (await client.getPoolPayout({ operationId: payout.operationId })).payout?.contributions,
    ).toHaveLength(1);
  });

  it("refuses an actual amount above the slot plus the free remainder", async () => {
    await clearPool();
    await addPayout("1000.00");
    const { slot } = await client.admit(admitMother("1000.00"));
    const over = await refusalOf(
      client.confirmSlot({ payinId: slot?.payinId ?? "", actualAmount: "1000.01" }),
    );
    expect(over).toEqual({ code: Code.FailedPrecondition, publicCode: "amount_unavailable" });
    const still = await client.confirmSlot({ payinId: slot?.payinId ?? "", actualAmount: "1000.00" });
    expect(still.payoutCompleted).toBe(true);
  });
});

describe("the sweep", () => {
  it("never releases a reserved slot on its own clock: past its expires_at it stays reserved until ReleaseSlot", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const { slot } = await client.admit(admitMother("400.00", { slotLifetimeMs: 1000n }));
    await h.sql`update matching.slots set expires_at = now() - interval '1 second' where payin_id = ${slot?.payinId ?? ""}`;
    await h.sql`update matching.pool_payouts set window_ends_at = now() - interval '1 second'`;
    // The payment that holds the slot may still be paid (awaiting its receipt, in manual
    // check): only operations ends the slot, when the payment ends.
    expect((await client.sweepPool({})).closedPayouts).toEqual([]);
    const [row] = await h.sql<{ status: string }[]>`
      select status from matching.slots where payin_id = ${slot?.payinId ?? ""}`;
    expect(row?.status).toBe("reserved");
    const still = await client.getPoolPayout({ operationId: payout.operationId });
    expect(still.payout).toMatchObject({ status: "open", freeAmount: "600.00", reservedAmount: "400.00" });
    await client.releaseSlot({ payinId: slot?.payinId ?? "", reason: "expired" });
    const swept = await client.sweepPool({});
    expect(swept.closedPayouts.map((p) => [p.operationId, p.handedOffAmount])).toEqual([
      [payout.operationId, "1000.00"],
    ]);
  });

  it("hands off the remainder when the window ends, after the reserved slots settle", async () => {
    await clearPool();
    const payout = await addPayout("1000.00");
    const paid = (await client.admit(admitMother("300.00"))).slot;
    const pending = (await client.admit(admitMother("200.00"))).slot;
    await client.confirmSlot({ payinId: paid?.payinId ?? "", actualAmount: "300.00" });
    await h.sql`update matching.pool_payouts set window_ends_at = now() - interval '1 second'`;
    expect((await client.sweepPool({})).closedPayouts).toEqual([]);
    await client.releaseSlot({ payinId: pending?.payinId ?? "", reason: "expired" });
    const swept = await client.sweepPool({});
    expect(
      swept.closedPayouts.map((p) => [p.operationId, p.status, p.handedOffAmount, p.paidAmount]),
    ).toEqual([[payout.operationId, "handed_off", "700.00", "300.00"]]);
    expect(swept.closedPayouts[0]?.contributions.map((c) => c.payinId)).toEqual([paid?.payinId]);
    const subjects = await h.sql<{ subject: string }[]>`select subject from matching.outbox`;
    expect(subjects.map((s) => s.subject.split(".").slice(-2).join("."))).toEqual(["pool_payout.handed_off"]);
    expect((await client.sweepPool({})).closedPayouts).toEqual([]);
  });
});
