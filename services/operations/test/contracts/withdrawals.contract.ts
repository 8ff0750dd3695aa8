import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { CreateStore } from "../../src/repository/store.ts";

const HOUR = 3_600_000;

/**
 * What `operations.withdrawals` keeps (`WithdrawalRepository`, `MemoryWithdrawals`), in
 * `describeOperationStore`: a create's pass-over in its transaction, the driver's lease,
 * retries and ends, and the providers a retried create must not ask again. Rows of other
 * tests may share the store: each test looks at its own operations only.
 */
export function describeWithdrawals(name: string, make: () => Promise<{ store: CreateStore }>): void {
  describe(`${name}: withdrawals`, () => {
    const mine = (ids: string[]) => (rows: { operation_id: string; provider: string }[]) =>
      rows
        .filter((w) => ids.includes(w.operation_id))
        .map((w) => `${w.operation_id.slice(0, 4)}@${w.provider}`);

    it("records a pass-over with its transaction only, asking, leased to the create until its lease runs out", async () => {
      const { store } = await make();
      const kept = randomUUID();
      const dropped = randomUUID();
      await store.transaction((tx) => store.withdrawals.passedOver(tx, kept, "a", HOUR));
      const failure = new Error("after the write");
      await expect(
        store.transaction(async (tx) => {
          await store.withdrawals.passedOver(tx, dropped, "a", 0);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await store.withdrawals.asking(kept, "a")).toEqual({
        operation_id: kept,
        provider: "a",
        attempts: 0,
        passed_over: true,
      });
      expect(await store.withdrawals.asking(dropped, "a")).toBeUndefined();
      expect(mine([kept])(await store.withdrawals.lease(60_000, 1000))).toEqual([]);
      expect(await store.withdrawals.notToAskAgain(kept)).toEqual(["a"]);
      expect(await store.withdrawals.notToAskAgain(dropped)).toEqual([]);
    });

    it("leases a due withdrawal once while the lease runs, retries it later, and ends it once", async () => {
      const { store } = await make();
      const id = randomUUID();
      await store.transaction((tx) => store.withdrawals.passedOver(tx, id, "b", 0));
      await store.transaction((tx) => store.withdrawals.passedOver(tx, id, "a", 0));
      const leased = (await store.withdrawals.lease(60_000, 1000)).filter((w) => w.operation_id === id);
      expect(mine([id])(leased).sort()).toEqual([`${id.slice(0, 4)}@a`, `${id.slice(0, 4)}@b`]);
      expect(mine([id])(await store.withdrawals.lease(60_000, 1000))).toEqual([]);
      const [a, b] = [...leased].sort((x, y) => (x.provider < y.provider ? -1 : 1));
      if (!a || !b) throw new Error("not leased");
      await store.withdrawals.retryLater(a, 1, "timeout", 0);
      expect(mine([id])(await store.withdrawals.lease(60_000, 1000))).toEqual([`${id.slice(0, 4)}@a`]);
      expect((await store.withdrawals.asking(id, "a"))?.attempts).toBe(1);
      await store.withdrawals.end({ ...a, attempts: 1 }, "withdrawn", null);
      await store.withdrawals.end(b, "final", null);
      // Ended: neither asked nor rescheduled again; a final one is not to be asked again by a retry.
      await store.withdrawals.retryLater(b, 5, "late", 0);
      await store.withdrawals.end(b, "gave_up", "late");
      expect(await store.withdrawals.asking(id, "a")).toBeUndefined();
      expect(await store.withdrawals.asking(id, "b")).toBeUndefined();
      expect(await store.withdrawals.notToAskAgain(id)).toEqual(["b"]);
      expect(mine([id])(await store.withdrawals.lease(60_000, 1000))).toEqual([]);
    });

    it("asks an ended pass-over again when the provider is passed over again, from its first attempt", async () => {
      const { store } = await make();
      const id = randomUUID();
      await store.transaction((tx) => store.withdrawals.passedOver(tx, id, "a", 0));
      const w = await store.withdrawals.asking(id, "a");
      if (!w) throw new Error("not asking");
      await store.withdrawals.end(w, "withdrawn", null);
      await store.transaction((tx) => store.withdrawals.passedOver(tx, id, "a", HOUR));
      expect(await store.withdrawals.asking(id, "a")).toEqual({ ...w, attempts: 0 });
      expect(await store.withdrawals.notToAskAgain(id)).toEqual(["a"]);
    });
  });
}
