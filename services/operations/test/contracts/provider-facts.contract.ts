import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { StateMoveRefusedError } from "../../src/domain/state-machine.ts";
import type { FactRow, NewFact } from "../../src/repository/provider-facts.ts";
import type { OperationStore } from "../../src/repository/store.ts";

/** What the provider-fact contract needs of a store. */
export type FactStore = Pick<OperationStore, "transaction" | "facts">;

/** A new fact of the operation `operationId`, `over` as given. */
export function newFact(operationId: string, over: Partial<NewFact> = {}): NewFact {
  return {
    id: randomUUID(),
    provider: "acme",
    reference: operationId,
    fact_key: `legs:${randomUUID()}`,
    operation_id: operationId,
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    kind: "late_completion",
    provider_status: "completed",
    direction: "payin",
    amount: "10",
    currency: "RUB",
    ...over,
  };
}

const resolution = (action = "write_off") => ({
  action,
  operator: "op",
  reason: "checked",
  figures: undefined,
});
const time = (t: string | Date | null) => (t === null ? null : new Date(t).getTime());
const ids = (rows: FactRow[]) => rows.map((f) => f.id);

/**
 * What `operations.provider_facts` keeps (`ProviderFactRepository` with the functions of
 * repository/provider-facts.ts, `MemoryProviderFacts`): a fact recorded once per
 * (provider, reference, fact_key) in its transaction, resolved once, listed open first
 * then newest, counted while open. Facts of other tests may share the store: each test
 * looks at its own operations only (or at differences, for the counts).
 */
export function describeProviderFacts(name: string, make: () => Promise<{ store: FactStore }>): void {
  describe(`${name}: provider facts`, () => {
    const insert = (store: FactStore, fact: NewFact) =>
      store.transaction((tx) => store.facts.insert(tx, fact));

    it("records a fact once per provider, reference and key, open, with its amount at the column's scale", async () => {
      const { store } = await make();
      const op = randomUUID();
      const fact = newFact(op, { amount: "10.5" });
      const row = await insert(store, fact);
      expect(row).toMatchObject({
        ...fact,
        amount: "10.50",
        status: "open",
        resolution: null,
        resolved_by: null,
        resolution_reason: null,
        settlement_amount: null,
        commission_amount: null,
        settlement_currency: null,
        resolved_at: null,
      });
      expect(Number.isNaN(time(row?.created_at ?? null))).toBe(false);
      // The same report again (another id, the same source): nothing more.
      expect(await insert(store, { ...fact, id: randomUUID(), amount: "99" })).toBeUndefined();
      // Another key of the same reference, or the same key at another provider: a fact of its own.
      expect(await insert(store, { ...fact, id: randomUUID(), fact_key: "receipt:1" })).toBeDefined();
      expect(await insert(store, { ...fact, id: randomUUID(), provider: "other" })).toBeDefined();
      const listed = await store.facts.list({ operationId: op, limit: 10 });
      expect(listed).toHaveLength(3);
      expect(listed.find((f) => f.id === fact.id)?.amount).toBe("10.50");
    });

    it("records a fact with its transaction only, and keeps a fact without amount or currency", async () => {
      const { store } = await make();
      const op = randomUUID();
      const failure = new Error("after the insert");
      await expect(
        store.transaction(async (tx) => {
          await store.facts.insert(tx, newFact(op));
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await store.facts.list({ operationId: op, limit: 10 })).toEqual([]);
      const unknown = await insert(store, newFact(op, { amount: null, currency: null }));
      expect(unknown).toMatchObject({ amount: null, currency: null, status: "open" });
      await expect(insert(store, newFact(op, { amount: "0" }))).rejects.toThrow();
      expect(ids(await store.facts.list({ operationId: op, limit: 10 }))).toEqual([unknown?.id]);
    });

    it("resolves an open fact once, under its lock, with the figures at their scale; a resolved one is refused", async () => {
      const { store } = await make();
      const op = randomUUID();
      const fact = await insert(store, newFact(op));
      if (!fact) throw new Error("not recorded");
      const failure = new Error("after the resolution");
      await expect(
        store.transaction(async (tx) => {
          await store.facts.markResolved(tx, fact.id, resolution());
          throw failure;
        }),
      ).rejects.toBe(failure);
      const resolved = await store.transaction(async (tx) => {
        expect(await store.facts.lock(tx, fact.id)).toMatchObject({ id: fact.id, status: "open" });
        return store.facts.markResolved(tx, fact.id, {
          action: "credit_shop",
          operator: "alice",
          reason: "paid late",
          figures: { settlement: "9.5", commission: "0.5", currency: "RUB" },
        });
      });
      expect(resolved).toMatchObject({
        id: fact.id,
        status: "resolved",
        resolution: "credit_shop",
        resolved_by: "alice",
        resolution_reason: "paid late",
        settlement_amount: "9.500000",
        commission_amount: "0.500000",
        settlement_currency: "RUB",
      });
      expect(time(resolved?.resolved_at ?? null)).toBeGreaterThanOrEqual(time(fact.created_at) ?? 0);
      // Resolved once: another resolution is refused and changes nothing.
      await expect(
        store.transaction((tx) => store.facts.markResolved(tx, fact.id, resolution())),
      ).rejects.toBeInstanceOf(StateMoveRefusedError);
      const [after] = await store.facts.list({ operationId: op, limit: 1 });
      expect(after).toMatchObject({
        status: "resolved",
        resolution: "credit_shop",
        settlement_amount: "9.500000",
      });
      // No such fact: nothing to resolve, nothing locked.
      const missing = randomUUID();
      expect(
        await store.transaction((tx) => store.facts.markResolved(tx, missing, resolution())),
      ).toBeUndefined();
      expect(await store.transaction((tx) => store.facts.lock(tx, missing))).toBeUndefined();
    });

    it("lists open facts first, then the newest, by status and operation, up to the limit", async () => {
      const { store } = await make();
      const op = randomUUID();
      const recorded: FactRow[] = [];
      for (let i = 0; i < 4; i++) {
        const row = await insert(store, newFact(op));
        if (!row) throw new Error("not recorded");
        recorded.push(row);
      }
      const [first, second, third, fourth] = recorded.map((f) => f.id);
      await insert(store, newFact(randomUUID()));
      // The newest and the oldest resolved: the open ones come first all the same.
      for (const id of [fourth, first])
        await store.transaction((tx) => store.facts.markResolved(tx, id ?? "", resolution()));
      expect(ids(await store.facts.list({ operationId: op, limit: 10 }))).toEqual([
        third,
        second,
        fourth,
        first,
      ]);
      expect(ids(await store.facts.list({ operationId: op, limit: 3 }))).toEqual([third, second, fourth]);
      expect(ids(await store.facts.list({ operationId: op, status: "resolved", limit: 10 }))).toEqual([
        fourth,
        first,
      ]);
      expect(ids(await store.facts.list({ operationId: op, status: "open", limit: 1 }))).toEqual([third]);
      const open = await store.facts.list({ status: "open", limit: 1000 });
      expect(open.every((f) => f.status === "open")).toBe(true);
      expect(ids(open)).toEqual(expect.arrayContaining([third, second]));
    });

    it("counts the open facts per kind, and no resolved one", async () => {
      const { store } = await make();
      const counts = async () => new Map((await store.facts.countOpen()).map((c) => [c.kind, c.n]));
      const before = await counts();
      const op = randomUUID();
      const facts = await Promise.all(
        (["not_routed", "not_routed", "slot_refused"] as const).map((kind) =>
          insert(store, newFact(op, { kind, direction: "payout" })),
        ),
      );
      const after = await counts();
      expect((after.get("not_routed") ?? 0) - (before.get("not_routed") ?? 0)).toBe(2);
      expect((after.get("slot_refused") ?? 0) - (before.get("slot_refused") ?? 0)).toBe(1);
      expect(after.get("late_completion") ?? 0).toBe(before.get("late_completion") ?? 0);
      await store.transaction((tx) => store.facts.markResolved(tx, facts[0]?.id ?? "", resolution()));
      expect(((await counts()).get("not_routed") ?? 0) - (before.get("not_routed") ?? 0)).toBe(1);
    });

    it("adds up an operation's amount mismatches, in the caller's transaction", async () => {
      const { store } = await make();
      const op = randomUUID();
      expect(await store.transaction((tx) => store.facts.mismatchTotal(tx, op))).toBe("0");
      await insert(store, newFact(op, { kind: "amount_mismatch", amount: "10" }));
      await insert(store, newFact(op, { kind: "amount_mismatch", amount: "2.5" }));
      await insert(store, newFact(op, { kind: "amount_mismatch", amount: null }));
      await insert(store, newFact(op, { kind: "late_completion", amount: "100" }));
      await insert(store, newFact(randomUUID(), { kind: "amount_mismatch", amount: "1000" }));
      const total = await store.transaction(async (tx) => {
        await store.facts.insert(tx, newFact(op, { kind: "amount_mismatch", amount: "0.25" }));
        return store.facts.mismatchTotal(tx, op);
      });
      expect(total).toBe("12.75");
    });
  });
}
