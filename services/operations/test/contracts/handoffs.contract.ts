import { randomUUID } from "node:crypto";
import { eventually } from "@gw/testkit";
import { describe, expect, it } from "vitest";
import { HANDOFF_CHANNEL, type HandOffRow } from "../../src/repository/handoffs.ts";
import type { OperationStore } from "../../src/repository/store.ts";

const HOUR = 3_600_000;

/** What the hand-off contract needs of a store. */
export type HandOffStore = Pick<OperationStore, "transaction" | "listen" | "handoffs">;

/**
 * What `operations.pool_handoffs` keeps (`HandOffRepository` with `insertHandOff`,
 * `MemoryHandOffs`): a hand-off recorded once in the consumer's transaction, asking; the
 * driver's lease by the store's clock, in due order and up to its limit; and its answers,
 * each recorded only while the hand-off is still asking at the position the driver read.
 * Every test leaves its hand-offs not due (leased for an hour, or ended), so that the
 * leases of the next test see only its own.
 */
export function describeHandOffs(name: string, make: () => Promise<{ store: HandOffStore }>): void {
  describe(`${name}: hand-offs`, () => {
    const mine = (id: string, rows: HandOffRow[]) => rows.filter((h) => h.operation_id === id);
    const record = (store: HandOffStore, id: string, amount = "10", candidates = ["a", "b"]) =>
      store.transaction((tx) => store.handoffs.record(tx, id, amount, candidates));
    /** Leases the hand-off `id` for an hour: the row the driver works with. */
    const leased = async (store: HandOffStore, id: string) => {
      const [h] = mine(id, await store.handoffs.lease(HOUR, 1000));
      if (!h) throw new Error(`${id} not due`);
      return h;
    };

    it("records a hand-off once, with its transaction only, asking its first candidate at once, and wakes the driver", async () => {
      const { store } = await make();
      let woken = 0;
      const stop = await store.listen(HANDOFF_CHANNEL, () => woken++);
      try {
        const id = randomUUID();
        const dropped = randomUUID();
        await record(store, id, "10.5", ["a", "b"]);
        await eventually(
          async () => woken,
          (n) => expect(n).toBeGreaterThan(0),
        );
        await record(store, id, "99", ["c"]);
        const failure = new Error("after the record");
        await expect(
          store.transaction(async (tx) => {
            await store.handoffs.record(tx, dropped, "10", ["a"]);
            throw failure;
          }),
        ).rejects.toBe(failure);
        const due = await store.handoffs.lease(HOUR, 1000);
        expect(mine(id, due)).toEqual([
          { operation_id: id, amount: "10.50", candidates: ["a", "b"], position: 0, attempts: 0 },
        ]);
        expect(mine(dropped, due)).toEqual([]);
      } finally {
        await stop();
      }
    });

    it("leases a due hand-off once while its lease runs, the longest due first, up to the limit", async () => {
      const { store } = await make();
      const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
      for (const id of [first, second, third]) await record(store, id);
      expect((await store.handoffs.lease(HOUR, 2)).map((h) => h.operation_id)).toEqual([first, second]);
      expect((await store.handoffs.lease(HOUR, 2)).map((h) => h.operation_id)).toEqual([third]);
      expect(await store.handoffs.lease(HOUR, 2)).toEqual([]);
      // A lease that ran out: due again.
      const late = randomUUID();
      await record(store, late);
      expect((await store.handoffs.lease(0, 1)).map((h) => h.operation_id)).toEqual([late]);
      expect((await store.handoffs.lease(HOUR, 1)).map((h) => h.operation_id)).toEqual([late]);
      expect(await store.handoffs.lease(HOUR, 1)).toEqual([]);
    });

    it("counts an unanswered ask and asks the same candidate again after the delay, only at the position read", async () => {
      const { store } = await make();
      const id = randomUUID();
      await record(store, id);
      const h = await leased(store, id);
      await store.handoffs.retryLater(h, 1, 0);
      const again = await leased(store, id);
      expect(again).toEqual({ ...h, attempts: 1 });
      await store.handoffs.retryLater(again, 2, HOUR);
      expect(mine(id, await store.handoffs.lease(HOUR, 1000))).toEqual([]);
      // Moved on meanwhile: a retry of the earlier position changes nothing.
      await store.handoffs.advance({ ...again, attempts: 2 });
      await store.handoffs.retryLater(again, 5, 0);
      expect(await leased(store, id)).toEqual({ ...h, position: 1, attempts: 0 });
    });

    it("passes a candidate over once: the next one is asked at once, from its first attempt", async () => {
      const { store } = await make();
      const id = randomUUID();
      await record(store, id, "10", ["a", "b", "c"]);
      const h = await leased(store, id);
      await store.handoffs.retryLater(h, 3, 0);
      const asked = await leased(store, id);
      await store.handoffs.advance(asked);
      // A second driver's answer for the same position: recorded already, nothing more.
      await store.handoffs.advance(asked);
      const next = await leased(store, id);
      expect(next).toEqual({ ...h, position: 1, attempts: 0 });
      await store.transaction(async (tx) => expect(await store.handoffs.exhaust(tx, asked)).toBe(false));
      expect(await store.transaction((tx) => store.handoffs.accept(tx, next, "b"))).toBe(true);
    });

    it("records an acceptance once, with its transaction only; an accepted hand-off is neither leased nor ended", async () => {
      const { store } = await make();
      const id = randomUUID();
      await record(store, id);
      const h = await leased(store, id);
      const failure = new Error("after the acceptance");
      await expect(
        store.transaction(async (tx) => {
          expect(await store.handoffs.accept(tx, h, "a")).toBe(true);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await store.transaction((tx) => store.handoffs.accept(tx, h, "a"))).toBe(true);
      expect(await store.transaction((tx) => store.handoffs.accept(tx, h, "a"))).toBe(false);
      expect(await store.transaction((tx) => store.handoffs.exhaust(tx, h))).toBe(false);
      await store.handoffs.retryLater(h, 1, 0);
      await store.handoffs.advance(h);
      await store.handoffs.supersede(id);
      expect(mine(id, await store.handoffs.lease(0, 1000))).toEqual([]);
    });

    it("ends a hand-off nobody took once, at the last position read", async () => {
      const { store } = await make();
      const id = randomUUID();
      await record(store, id, "10", ["a"]);
      const h = await leased(store, id);
      expect(await store.transaction((tx) => store.handoffs.exhaust(tx, { ...h, position: 1 }))).toBe(false);
      expect(await store.transaction((tx) => store.handoffs.exhaust(tx, h))).toBe(true);
      expect(await store.transaction((tx) => store.handoffs.exhaust(tx, h))).toBe(false);
      expect(await store.transaction((tx) => store.handoffs.accept(tx, h, "a"))).toBe(false);
      expect(mine(id, await store.handoffs.lease(0, 1000))).toEqual([]);
    });

    it("supersedes a hand-off still asking: no answer is recorded after it", async () => {
      const { store } = await make();
      const id = randomUUID();
      await record(store, id);
      const h = await leased(store, id);
      await store.handoffs.supersede(id);
      await store.handoffs.supersede(randomUUID());
      expect(await store.transaction((tx) => store.handoffs.accept(tx, h, "a"))).toBe(false);
      expect(await store.transaction((tx) => store.handoffs.exhaust(tx, h))).toBe(false);
      await store.handoffs.retryLater(h, 1, 0);
      await store.handoffs.advance(h);
      expect(mine(id, await store.handoffs.lease(0, 1000))).toEqual([]);
    });
  });
}
