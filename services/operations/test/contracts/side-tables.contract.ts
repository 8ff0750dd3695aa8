import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { forceTransition } from "../../src/repository/force-transition.ts";
import type { CreateStore, OperationStore } from "../../src/repository/store.ts";
import { inserted } from "./store.contract.ts";

const HOUR = 3_600_000;

/** A store with the side tables this contract checks. */
export type SideTableStore = CreateStore & Pick<OperationStore, "shopPages" | "operatorQueue" | "audit">;

/** An ISO 8601 UTC timestamp with milliseconds, as the operator queue answers them. */
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * What the smaller side tables keep (`ShopPageRepository`, `OperatorQueueRepository`,
 * `AuditRepository` and their memory twins): a shop page's upsert of the fields given, a
 * payout queued for an operator once and counted while unresolved, and the audit's pages
 * of operations with their legs. Rows of other tests may share the store (and the
 * queue's count): each test looks at its own rows, and at the count's change.
 */
export function describeSideTables(name: string, make: () => Promise<{ store: SideTableStore }>): void {
  describe(`${name}: shop pages`, () => {
    it("writes the fields given, keeps the others, clears one given null", async () => {
      const { store } = await make();
      const shop = randomUUID();
      expect(await store.shopPages.get(shop)).toBeUndefined();
      expect(await store.shopPages.put(shop, { display_name: "Shop" })).toEqual({
        display_name: "Shop",
        return_url: null,
      });
      expect(await store.shopPages.put(shop, { return_url: "https://shop.test/back" })).toEqual({
        display_name: "Shop",
        return_url: "https://shop.test/back",
      });
      expect(await store.shopPages.put(shop, { display_name: null })).toEqual({
        display_name: null,
        return_url: "https://shop.test/back",
      });
      expect(await store.shopPages.put(shop, {})).toEqual({
        display_name: null,
        return_url: "https://shop.test/back",
      });
      expect(await store.shopPages.get(shop)).toEqual({
        display_name: null,
        return_url: "https://shop.test/back",
      });
      expect(await store.shopPages.get(randomUUID())).toBeUndefined();
    });
  });

  describe(`${name}: operator queue`, () => {
    it("queues an unresolved payout past the horizon once, and counts it until it leaves routing", async () => {
      const { store } = await make();
      const before = await store.operatorQueue.countAwaiting();
      const payout = await inserted(store, { type: "payout", routing_unresolved: "b" });
      const payin = await inserted(store, { type: "payment" });
      const pending = await inserted(store, { type: "payout", status: "pending", provider: "a" });
      expect(await store.operatorQueue.queueUnresolvedPayout(payout.id, HOUR)).toBeUndefined();
      expect(await store.operatorQueue.queueUnresolvedPayout(payin.id, 0)).toBeUndefined();
      expect(await store.operatorQueue.queueUnresolvedPayout(pending.id, 0)).toBeUndefined();
      expect(await store.operatorQueue.queueUnresolvedPayout(randomUUID(), 0)).toBeUndefined();
      const queued = await store.operatorQueue.queueUnresolvedPayout(payout.id, 0);
      expect(queued).toEqual({
        id: payout.id,
        shop_id: payout.shop_id,
        routing_unresolved: "b",
        created_at: payout.created_at,
      });
      expect(await store.operatorQueue.queueUnresolvedPayout(payout.id, 0)).toBeUndefined();
      expect(await store.operatorQueue.countAwaiting()).toBe(before + 1);
      // Not a change of the operation's state.
      const after = await store.findAnyById(payout.id);
      expect(after?.version).toBe(payout.version);
      expect(after?.status).toBe("routing");
      const moved = await forceTransition(
        store,
        after!,
        { status: "pending", provider: "a" },
        { emit: true },
      );
      expect(moved?.status).toBe("pending");
      expect(await store.operatorQueue.countAwaiting()).toBe(before);
      expect((await store.operatorQueue.listAwaiting(10_000)).map((r) => r.id)).not.toContain(payout.id);
    });

    it("lists the queue oldest queued first with the payout's withdrawals by provider", async () => {
      const { store } = await make();
      const first = await inserted(store, { type: "payout", routing_passed: ["a"] });
      const second = await inserted(store, { type: "payout" });
      await store.operatorQueue.queueUnresolvedPayout(second.id, 0);
      await new Promise((r) => setTimeout(r, 5));
      await store.operatorQueue.queueUnresolvedPayout(first.id, 0);
      await store.transaction((tx) => store.withdrawals.passedOver(tx, first.id, "b", HOUR));
      await store.transaction((tx) => store.withdrawals.passedOver(tx, first.id, "a", HOUR));
      const rows = (await store.operatorQueue.listAwaiting(10_000)).filter((r) =>
        [first.id, second.id].includes(r.id),
      );
      expect(rows.map((r) => r.id)).toEqual([second.id, first.id]);
      const [s, f] = rows;
      expect(s).toEqual({
        id: second.id,
        shop_id: second.shop_id,
        merchant_operation_id: second.merchant_operation_id,
        amount: "1000.00",
        currency: "RUB",
        created_at: second.created_at.toISOString(),
        operator_queued_at: expect.stringMatching(ISO),
        routing_unresolved: null,
        routing_passed: [],
        reconcile_checks: 0,
        next_check_at: null,
        withdrawals: null,
      });
      expect(f?.routing_passed).toEqual(["a"]);
      expect(f?.withdrawals).toEqual(
        ["a", "b"].map((provider) => ({
          provider,
          status: "asking",
          attempts: 0,
          last_error: null,
          updated_at: expect.stringMatching(ISO),
        })),
      );
      expect((await store.operatorQueue.listAwaiting(1)).length).toBe(1);
    });
  });

  describe(`${name}: audit`, () => {
    it("pages every operation in id order after the cursor, with its legs summed per provider", async () => {
      const { store } = await make();
      const full = await inserted(store);
      const placeholder = await inserted(store, { request_hash: null });
      const [a, b] = [full, placeholder].sort((x, y) => (x.id < y.id ? -1 : 1));
      if (!a || !b) throw new Error("not inserted");
      const legs = [
        { provider: "y", amount: "100" },
        { provider: "x", amount: "50" },
        { provider: "x", amount: "25.5" },
      ];
      await store.transaction(async (tx) => {
        for (const [i, leg] of legs.entries())
          await store.insertLeg(tx, {
            id: randomUUID(),
            operationId: full.id,
            provider: leg.provider,
            providerLegId: `leg-${i}`,
            amount: leg.amount,
            completedAt: new Date(Date.now() + i).toISOString(),
          });
      });
      const mine = <R extends { id: string }>(rows: R[]) =>
        rows.filter((r) => r.id === a.id || r.id === b.id);
      const page = mine(await store.audit.operations("", 100_000));
      expect(page.map((r) => r.id)).toEqual([a.id, b.id]);
      // Postgres answers the timestamps as text, the memory store as Dates: callers read them with `new Date`.
      const at = (t: Date | string | undefined) => t !== undefined && new Date(t).getTime();
      const read = page.find((r) => r.id === full.id);
      expect(at(read?.created_at)).toBe(full.created_at.getTime());
      expect(at(read?.updated_at)).toBe(full.updated_at.getTime());
      expect({ ...read, created_at: undefined, updated_at: undefined }).toEqual({
        id: full.id,
        shop_id: full.shop_id,
        type: "payment",
        status: "routing",
        provider: null,
        amount: "1000.00",
        actual_amount: "0.00",
        currency: "RUB",
        placeholder: false,
        legs: [
          { provider: "x", amount: "75.50", count: 2 },
          { provider: "y", amount: "100.00", count: 1 },
        ],
        created_at: undefined,
        updated_at: undefined,
      });
      expect(page.find((r) => r.id === placeholder.id)).toMatchObject({ placeholder: true, legs: null });
      expect(mine(await store.audit.operations(a.id, 100_000)).map((r) => r.id)).toEqual([b.id]);
      const [one, ...none] = await store.audit.operations("", 1);
      expect(none).toEqual([]);
      expect(one && one.id <= a.id).toBe(true);
    });
  });
}
