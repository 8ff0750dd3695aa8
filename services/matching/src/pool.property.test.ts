import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatCents, METHOD_MINIMUMS, toCents } from "./policy.ts";
import { type PoolHarness, startPool } from "./test-support.ts";

let h: PoolHarness;

beforeAll(async () => {
  h = await startPool({ poolMax: 12 });
});
afterAll(async () => {
  await h?.stop();
});

/** One step of a lane; targets are indexes taken modulo what exists when the step runs. */
type Step =
  | { kind: "admit"; cents: number }
  | { kind: "release"; target: number; reason: "expired" | "rejected" | "cancelled" }
  | { kind: "confirm"; target: number }
  | { kind: "expire"; target: number }
  | { kind: "endWindow"; target: number }
  | { kind: "sweep" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.integer({ min: 50_00, max: 1_500_00 }).map((cents) => ({ kind: "admit" as const, cents })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("release" as const),
      target: fc.nat(),
      reason: fc.constantFrom("expired" as const, "rejected" as const, "cancelled" as const),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("confirm" as const), target: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const), target: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("endWindow" as const), target: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "sweep" as const }) },
);

const minimum = toCents(METHOD_MINIMUMS.WT_RUB_C2C);

describe("the pool under contention", () => {
  it("never over-allocates a payout and never loses a slot, whatever runs concurrently", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 100_00, max: 3_000_00 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.array(step, { minLength: 1, maxLength: 10 }), { minLength: 8, maxLength: 8 }),
        async (payoutCents, lanes) => {
          await h.sql`truncate matching.contributions, matching.slots, matching.pool_payouts, matching.outbox`;
          const payoutIds: string[] = [];
          for (const cents of payoutCents) {
            const res = await h.store.addPayout({
              operationId: randomUUID(),
              shopId: randomUUID(),
              method: "WT_RUB_C2C",
              currency: "RUB",
              amount: formatCents(BigInt(cents)),
              number: "4111111111111111",
              name: "POOL",
              bankname: null,
              windowEndsAt: new Date(Date.now() + 3600_000).toISOString(),
            });
            if ("refused" in res) throw new Error("seed payout refused");
            payoutIds.push(res.payout.operation_id);
          }
          const admitted: { payinId: string; amount: string }[] = [];
          const pick = (i: number) => admitted[i % Math.max(1, admitted.length)];

          const run = async (s: Step) => {
            switch (s.kind) {
              case "admit": {
                const payinId = randomUUID();
                const amount = formatCents(BigInt(s.cents));
                const res = await h.store.admit({
                  payinId,
                  shopId: randomUUID(),
                  method: "WT_RUB_C2C",
                  currency: "RUB",
                  amount,
                  minimum: METHOD_MINIMUMS.WT_RUB_C2C,
                  slotLifetimeMs: 600_000,
                  generation: 1,
                });
                if (!("refused" in res)) admitted.push({ payinId, amount });
                return;
              }
              case "release": {
                const slot = pick(s.target);
                if (slot) await h.store.release(slot.payinId, s.reason, 0);
                return;
              }
              case "confirm": {
                const slot = pick(s.target);
                if (slot) await h.store.confirm(slot.payinId, slot.amount);
                return;
              }
              case "expire": {
                const slot = pick(s.target);
                if (slot)
                  await h.sql`update matching.slots set expires_at = now() - interval '1 second'
                    where payin_id = ${slot.payinId}`;
                // The slot's time passing releases nothing: only its payment's end does.
                await h.store.closeEndedWindows(500);
                return;
              }
              case "endWindow": {
                const id = payoutIds[s.target % payoutIds.length];
                await h.sql`update matching.pool_payouts set window_ends_at = now() where operation_id = ${id ?? ""}`;
                await h.store.closeEndedWindows(500);
                return;
              }
              case "sweep":
                await h.store.closeEndedWindows(500);
                return;
            }
          };
          // Eight lanes run at once; each runs its steps one after another.
          await Promise.all(
            lanes.map(async (lane) => {
              for (const s of lane) await run(s);
            }),
          );

          const payouts = await h.sql<
            {
              id: string;
              amount: string;
              free: string;
              reserved: string;
              paid: string;
              handed: string;
              status: string;
            }[]
          >`
            select operation_id as id, amount::text as amount, free_amount::text as free,
              reserved_amount::text as reserved, paid_amount::text as paid,
              handed_off_amount::text as handed, status
            from matching.pool_payouts`;
          const slots = await h.sql<
            { payin_id: string; payout_id: string; amount: string; status: string }[]
          >`
            select payin_id, payout_id, amount::text as amount, status from matching.slots`;
          const contributions = await h.sql<{ payout_id: string; payin_id: string; amount: string }[]>`
            select payout_id, payin_id, amount::text as amount from matching.contributions`;

          // No slot is lost: every admitted payin has exactly its slot, and nothing else exists.
          expect(new Set(slots.map((s) => s.payin_id))).toEqual(new Set(admitted.map((a) => a.payinId)));
          const confirmed = new Set(slots.filter((s) => s.status === "confirmed").map((s) => s.payin_id));
          expect(new Set(contributions.map((c) => c.payin_id))).toEqual(confirmed);

          for (const p of payouts) {
            const [amount, free, reserved, paid, handed] = [
              p.amount,
              p.free,
              p.reserved,
              p.paid,
              p.handed,
            ].map(toCents) as [bigint, bigint, bigint, bigint, bigint];
            const sum = (rows: { amount: string }[]) => rows.reduce((acc, r) => acc + toCents(r.amount), 0n);
            const mine = slots.filter((s) => s.payout_id === p.id);
            // Slots, contributions and the free remainder add up to the amount, none negative.
            expect(sum(mine.filter((s) => s.status === "reserved"))).toBe(reserved);
            expect(sum(contributions.filter((c) => c.payout_id === p.id))).toBe(paid);
            expect(free + reserved + paid + handed).toBe(amount);
            for (const part of [free, reserved, paid, handed]) expect(part >= 0n).toBe(true);
            // The gap rule: confirmations here pay the slot amount, so no remainder is left
            // between zero and the minimum.
            expect(free === 0n || free >= minimum).toBe(true);
            expect(p.status === "completed").toBe(paid === amount);
            if (p.status === "handed_off") expect([reserved, free, handed > 0n]).toEqual([0n, 0n, true]);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
