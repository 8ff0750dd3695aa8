import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";

type Matching = Client<typeof MatchingService>;

/** The public code (and gRPC code) a call failed with. */
async function refusal(call: Promise<unknown>): Promise<{ code: Code; public?: string }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
  return { code: err.code, public: errorInfo(err)?.code };
}

const AMOUNT_UNAVAILABLE = { code: Code.FailedPrecondition, public: "amount_unavailable" };
const SLOT_SETTLED = { code: Code.FailedPrecondition, public: "slot_settled" };
const NOT_FOUND = { code: Code.NotFound, public: "not_found" };
const INVALID = { code: Code.InvalidArgument, public: "validation_failed" };

const HOUR = 3_600_000;
const LIFETIME_MS = 30 * 60_000;

/** A card-rail payout of `amount`, its window open for an hour (or ended, `windowMs` < 0). */
function payout(amount: string, over: { windowMs?: number; method?: string } = {}) {
  const operationId = randomUUID();
  return {
    operationId,
    shopId: randomUUID(),
    method: over.method ?? "WT_RUB_C2C",
    currency: "RUB",
    amount,
    destination: {
      number: `2202${operationId.replace(/\D/g, "").padEnd(12, "7").slice(0, 12)}`,
      name: "Ivan",
    },
    windowEndsAt: new Date(Date.now() + (over.windowMs ?? HOUR)).toISOString(),
  };
}

/** An Admit of `payinId` for `amount` by the routing attempt `generation`, as steps/pool.ts asks it. */
const admit = (payinId: string, amount: string, generation: bigint, method = "WT_RUB_C2C") => ({
  payinId,
  shopId: randomUUID(),
  method,
  currency: "RUB",
  amount,
  slotLifetimeMs: BigInt(LIFETIME_MS),
  generation,
});

const parts = (p: { freeAmount: string; reservedAmount: string; paidAmount: string } | undefined) => ({
  free: p?.freeAmount,
  reserved: p?.reservedAmount,
  paid: p?.paidAmount,
});

/**
 * What operations relies on in the matching service (steps/pool.ts, steps/pool-connector.ts,
 * usecases/pool-events.ts, usecases/flexible/link.ts): a payout put in once, the
 * admission policy, the order of a payin's admissions and releases by routing generation,
 * a confirmation once and the payout's completion, and the refusals operations maps
 * (`amount_unavailable` a decline, `slot_settled` and `not_found` on release and confirm).
 * Checked on the real service (matching.test.ts) and on `FakeMatching`
 * (matching.unit.test.ts). `make` gives a client of an empty pool: the pool is shared by
 * every shop of a method, so tests cannot keep out of each other's way by shop.
 */
export function describeMatchingContract(name: string, make: () => Promise<Matching>): void {
  describe(`${name}: the matching service operations uses`, () => {
    it("puts a payout into the pool once: a replay answers it as it is now, other terms are idempotency_conflict", async () => {
      const m = await make();
      const req = payout("1000.00");
      const added = await m.addPayout(req);
      expect(added.created).toBe(true);
      expect(added.payout).toMatchObject({
        operationId: req.operationId,
        shopId: req.shopId,
        amount: "1000.00",
        status: "open",
        destination: { number: req.destination.number, name: "Ivan" },
      });
      expect(parts(added.payout)).toEqual({ free: "1000.00", reserved: "0.00", paid: "0.00" });
      await m.admit(admit(randomUUID(), "400.00", 1n));
      const again = await m.addPayout(req);
      expect(again.created).toBe(false);
      expect(parts(again.payout)).toEqual({ free: "600.00", reserved: "400.00", paid: "0.00" });
      expect(await refusal(m.addPayout({ ...req, amount: "999.00" }))).toEqual({
        code: Code.FailedPrecondition,
        public: "idempotency_conflict",
      });
      expect(await refusal(m.addPayout({ ...payout("1000.00"), amount: "10" }))).toEqual(INVALID);
      expect((await m.getPoolPayout({ operationId: req.operationId })).payout?.freeAmount).toBe("600.00");
      expect(await refusal(m.getPoolPayout({ operationId: randomUUID() }))).toEqual(NOT_FOUND);
    });

    it("admits by the policy: an exact close first, else the smallest remainder left admissible, the oldest first", async () => {
      const m = await make();
      const older = payout("1000.00");
      const newer = payout("1000.00");
      const small = payout("500.00");
      const ended = payout("300.00", { windowMs: -60_000 });
      for (const p of [older, newer, small, ended]) await m.addPayout(p);
      const pick = async (amount: string) => (await m.admit(admit(randomUUID(), amount, 1n))).slot;

      const before = Date.now();
      const first = await pick("300.00");
      expect(first).toMatchObject({
        payoutId: small.operationId,
        amount: "300.00",
        status: "reserved",
        method: "WT_RUB_C2C",
        currency: "RUB",
        destination: { number: small.destination.number, name: "Ivan" },
      });
      const expires = Date.parse(first?.expiresAt ?? "");
      expect(expires).toBeGreaterThanOrEqual(before + LIFETIME_MS - 5_000);
      expect(expires).toBeLessThanOrEqual(Date.now() + LIFETIME_MS + 5_000);
      // 200.00 closes the small payout's remainder exactly: it wins over any best fit.
      expect((await pick("200.00"))?.payoutId).toBe(small.operationId);
      // 950.00 would leave 50.00 of a 1000.00, below the minimum; 50.00 is below it and closes nothing.
      expect(await refusal(m.admit(admit(randomUUID(), "950.00", 1n)))).toEqual(AMOUNT_UNAVAILABLE);
      expect(await refusal(m.admit(admit(randomUUID(), "50.00", 1n)))).toEqual(AMOUNT_UNAVAILABLE);
      expect((await pick("1000.00"))?.payoutId).toBe(older.operationId);
      expect((await pick("900.00"))?.payoutId).toBe(newer.operationId);
      expect((await pick("100.00"))?.payoutId).toBe(newer.operationId);
      // The ended window's payout takes nothing, nor does another method's pool.
      expect(await refusal(m.admit(admit(randomUUID(), "300.00", 1n)))).toEqual(AMOUNT_UNAVAILABLE);
      await m.addPayout(payout("500.00", { method: "WT_RUB_PHONE" }));
      expect(await refusal(m.admit(admit(randomUUID(), "500.00", 1n)))).toEqual(AMOUNT_UNAVAILABLE);
      expect(parts((await m.getPoolPayout({ operationId: ended.operationId })).payout)).toEqual({
        free: "300.00",
        reserved: "0.00",
        paid: "0.00",
      });
      expect(await refusal(m.admit({ ...admit(randomUUID(), "100.00", 1n), slotLifetimeMs: 0n }))).toEqual(
        INVALID,
      );
      expect(await refusal(m.admit({ ...admit(randomUUID(), "100.00", 1n), currency: "USDT" }))).toEqual(
        INVALID,
      );
    });

    it("replays a payin's slot whatever amount is asked; once released, that attempt is slot_settled and a newer one admitted afresh", async () => {
      const m = await make();
      const p = payout("1000.00");
      await m.addPayout(p);
      const payin = randomUUID();
      const first = await m.admit(admit(payin, "400.00", 1n));
      expect(first.created).toBe(true);
      const again = await m.admit(admit(payin, "400.00", 1n));
      expect({ created: again.created, payoutId: again.slot?.payoutId }).toEqual({
        created: false,
        payoutId: p.operationId,
      });
      // operations declines a slot for another amount (pool.ts); the pool answers the one it holds.
      expect((await m.admit(admit(payin, "500.00", 1n))).slot?.amount).toBe("400.00");

      const released = await m.releaseSlot({ payinId: payin, reason: "rejected", generation: 1n });
      expect(released.slot).toMatchObject({
        status: "released",
        releaseReason: "rejected",
        amount: "400.00",
      });
      const twice = await m.releaseSlot({ payinId: payin, reason: "expired", generation: 1n });
      expect(twice.slot).toMatchObject({ status: "released", releaseReason: "rejected" });
      expect(parts((await m.getPoolPayout({ operationId: p.operationId })).payout)).toEqual({
        free: "1000.00",
        reserved: "0.00",
        paid: "0.00",
      });

      expect(await refusal(m.admit(admit(payin, "400.00", 1n)))).toEqual(SLOT_SETTLED);
      const retried = await m.admit(admit(payin, "300.00", 2n));
      expect({
        created: retried.created,
        status: retried.slot?.status,
        amount: retried.slot?.amount,
      }).toEqual({
        created: true,
        status: "reserved",
        amount: "300.00",
      });
      expect((await m.getPoolPayout({ operationId: p.operationId })).payout?.freeAmount).toBe("700.00");
      expect(await refusal(m.releaseSlot({ payinId: payin, reason: "gone", generation: 2n }))).toEqual(
        INVALID,
      );
    });

    it("remembers a release with no slot (not_found), so that attempt's late Admit reserves nothing; a newer attempt's slot outlives an older release", async () => {
      const m = await make();
      const p = payout("1000.00");
      await m.addPayout(p);
      const payin = randomUUID();
      expect(await refusal(m.releaseSlot({ payinId: payin, reason: "cancelled", generation: 3n }))).toEqual(
        NOT_FOUND,
      );
      expect(await refusal(m.admit(admit(payin, "400.00", 3n)))).toEqual(SLOT_SETTLED);
      expect(await refusal(m.admit(admit(payin, "400.00", 2n)))).toEqual(SLOT_SETTLED);
      expect((await m.getPoolPayout({ operationId: p.operationId })).payout?.freeAmount).toBe("1000.00");

      expect((await m.admit(admit(payin, "400.00", 4n))).slot?.status).toBe("reserved");
      const older = await m.releaseSlot({ payinId: payin, reason: "cancelled", generation: 3n });
      expect(older.slot?.status).toBe("reserved");
      expect((await m.getPoolPayout({ operationId: p.operationId })).payout?.freeAmount).toBe("600.00");
      expect(
        (await m.releaseSlot({ payinId: payin, reason: "cancelled", generation: 4n })).slot?.status,
      ).toBe("released");

      // Generation 0 (a flexible link's admission): no tombstone check, a released slot admitted afresh.
      const linked = randomUUID();
      await m.admit(admit(linked, "250.00", 0n));
      await m.releaseSlot({ payinId: linked, reason: "rejected", generation: 5n });
      const readmitted = await m.admit(admit(linked, "250.00", 0n));
      expect({ created: readmitted.created, status: readmitted.slot?.status }).toEqual({
        created: true,
        status: "reserved",
      });
      expect((await m.getPoolPayout({ operationId: p.operationId })).payout?.freeAmount).toBe("750.00");
    });

    it("confirms a slot once with its actual amount and completes the payout paid in full, with every contribution", async () => {
      const m = await make();
      const p = payout("1000.00");
      await m.addPayout(p);
      const a = randomUUID();
      const b = randomUUID();
      await m.admit(admit(a, "600.00", 1n));
      await m.admit(admit(b, "400.00", 1n));

      const first = await m.confirmSlot({ payinId: a, actualAmount: "600.00" });
      expect({ completed: first.payoutCompleted, status: first.slot?.status }).toEqual({
        completed: false,
        status: "confirmed",
      });
      expect(first.contribution).toMatchObject({ payinId: a, amount: "600.00" });
      expect(parts(first.payout)).toEqual({ free: "0.00", reserved: "400.00", paid: "600.00" });
      const replay = await m.confirmSlot({ payinId: a, actualAmount: "600.00" });
      expect(replay.contribution?.id).toBe(first.contribution?.id);
      expect(await refusal(m.confirmSlot({ payinId: a, actualAmount: "500.00" }))).toEqual(SLOT_SETTLED);
      expect(await refusal(m.releaseSlot({ payinId: a, reason: "expired", generation: 1n }))).toEqual(
        SLOT_SETTLED,
      );

      const last = await m.confirmSlot({ payinId: b, actualAmount: "400.00" });
      expect(last.payoutCompleted).toBe(true);
      expect(last.payout?.status).toBe("completed");
      expect(last.payout?.contributions.map((c) => [c.payinId, c.amount])).toEqual([
        [a, "600.00"],
        [b, "400.00"],
      ]);
      const lastReplay = await m.confirmSlot({ payinId: b, actualAmount: "400.00" });
      expect({ completed: lastReplay.payoutCompleted, id: lastReplay.contribution?.id }).toEqual({
        completed: true,
        id: last.contribution?.id,
      });
      const read = (await m.getPoolPayout({ operationId: p.operationId })).payout;
      expect({ status: read?.status, ...parts(read) }).toEqual({
        status: "completed",
        free: "0.00",
        reserved: "0.00",
        paid: "1000.00",
      });
      expect(read?.contributions.map((c) => c.id)).toEqual([first.contribution?.id, last.contribution?.id]);
      expect(await refusal(m.confirmSlot({ payinId: randomUUID(), actualAmount: "1.00" }))).toEqual(
        NOT_FOUND,
      );
    });

    it("gives a shortfall back to the remainder, takes an excess only from it (amount_unavailable beyond), and settles no released slot", async () => {
      const m = await make();
      const p = payout("1000.00");
      await m.addPayout(p);
      const short = randomUUID();
      const rest = randomUUID();
      const gone = randomUUID();
      await m.admit(admit(short, "500.00", 1n));
      expect(parts((await m.confirmSlot({ payinId: short, actualAmount: "450.00" })).payout)).toEqual({
        free: "550.00",
        reserved: "0.00",
        paid: "450.00",
      });
      await m.admit(admit(rest, "550.00", 1n));
      expect(await refusal(m.confirmSlot({ payinId: rest, actualAmount: "560.00" }))).toEqual(
        AMOUNT_UNAVAILABLE,
      );
      const closing = await m.confirmSlot({ payinId: rest, actualAmount: "550.00" });
      expect({ completed: closing.payoutCompleted, paid: closing.payout?.paidAmount }).toEqual({
        completed: true,
        paid: "1000.00",
      });

      const q = payout("700.00");
      await m.addPayout(q);
      await m.admit(admit(gone, "300.00", 1n));
      await m.releaseSlot({ payinId: gone, reason: "expired", generation: 1n });
      expect(await refusal(m.confirmSlot({ payinId: gone, actualAmount: "300.00" }))).toEqual(SLOT_SETTLED);
      expect(parts((await m.getPoolPayout({ operationId: q.operationId })).payout)).toEqual({
        free: "700.00",
        reserved: "0.00",
        paid: "0.00",
      });
    });

    it("reads the admissible amounts as merged intervals within the bounds, reserving nothing", async () => {
      const m = await make();
      const big = payout("1000.00");
      await m.addPayout(big);
      await m.addPayout(payout("300.00"));
      await m.addPayout(payout("5000.00", { windowMs: -60_000 }));
      const read = (minAmount: string, maxAmount: string, coverage = "full") =>
        m.availability({ method: "WT_RUB_C2C", currency: "RUB", minAmount, maxAmount, coverage });
      const all = await read("0.01", "9999999999999999.99");
      expect({ coverage: all.coverage, reserved: all.reserved, truncated: all.truncated }).toEqual({
        coverage: "full",
        reserved: false,
        truncated: false,
      });
      expect(all.intervals.map((i) => [i.minAmount, i.maxAmount])).toEqual([
        ["100.00", "900.00"],
        ["1000.00", "1000.00"],
      ]);
      expect((await read("950.00", "2000.00")).intervals.map((i) => [i.minAmount, i.maxAmount])).toEqual([
        ["1000.00", "1000.00"],
      ]);
      expect((await read("0.01", "9999999999999999.99", "none")).intervals).toEqual([]);
      await m.admit(admit(randomUUID(), "1000.00", 1n));
      expect(
        (await read("0.01", "9999999999999999.99")).intervals.map((i) => [i.minAmount, i.maxAmount]),
      ).toEqual([
        ["100.00", "200.00"],
        ["300.00", "300.00"],
      ]);
      expect(await refusal(read("200.00", "100.00"))).toEqual(INVALID);
      expect(await refusal(read("1.00", "2.00", "most"))).toEqual(INVALID);
    });
  });
}
