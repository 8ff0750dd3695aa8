import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  AlreadyTerminalError,
  LegsDisagreeError,
  LifecycleViolationError,
  NotCancellableError,
} from "../../src/domain/lifecycle/errors.ts";
import type { OperationRow, ReconcileRow } from "../../src/domain/model.ts";
import { forceTransition } from "../../src/repository/force-transition.ts";
import type { ClaimRow, CreateStore, InsertRow, OperationStoreCore } from "../../src/repository/store.ts";
import { describeWithdrawals } from "./withdrawals.contract.ts";

/** A store to check, with what the contract needs to see besides it. */
export interface StoreUnderTest {
  store: CreateStore;
  /** The subjects of the events the store queued so far, oldest first. */
  events(): Promise<string[]>;
  /** Makes a flexible link hold `row`'s (shop, merchant_operation_id) for the payment `row.id`. */
  holdKeyForLink(row: ClaimRow): Promise<void>;
}

const MINUTE = 60_000;
const ago = (ms: number) => new Date(Date.now() - ms);

/** A create's claim of a new key, priced and not yet routed. */
export function claimRow(over: Partial<ClaimRow> = {}): ClaimRow {
  return {
    id: randomUUID(),
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    merchant_operation_id: randomUUID(),
    request_hash: "hash",
    type: "payment",
    method: "WT_RUB_C2C",
    currency: "RUB",
    expected_amount: "1000.00",
    client_id: "client",
    client_ip: "10.0.0.1",
    number: null,
    name: null,
    bankname: null,
    settlement_currency: "USDT",
    fx_rate: "0.012346000000",
    fx_source: "cb",
    commission_percent: "2.5000",
    commission_fixed: "10.000000",
    pricing_version: "7",
    ...over,
  };
}

/** A row inserted in `status` (default `routing`, its request recorded) with `over`. */
export async function inserted(
  store: OperationStoreCore,
  over: Partial<InsertRow> = {},
): Promise<OperationRow> {
  const row = await store.insert({
    id: randomUUID(),
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    merchant_operation_id: randomUUID(),
    request_hash: "hash",
    type: "payment",
    status: "routing",
    expected_amount: "1000.00",
    currency: "RUB",
    ...over,
  });
  if (!row) throw new Error("not inserted");
  return row;
}

/**
 * The contract every `OperationStoreCore` keeps (`PgOperationStore` in store.pg.test.ts,
 * `MemoryOperationStore` in store.memory.test.ts): idempotent claims, the lifecycle's
 * moves allowed and refused with their events, legs agreeing with the status,
 * transactions, reads, the routing configuration and the reconciler's queue. `make` gives
 * a fresh store (its own events prefix); rows of other tests may share it.
 */
export function describeOperationStore(name: string, make: () => Promise<StoreUnderTest>): void {
  async function pending(store: OperationStoreCore, over: Partial<InsertRow> = {}): Promise<OperationRow> {
    const { row } = await store.applyFact(await inserted(store, over), {
      kind: "provider_accepted",
      provider: "a",
      receiptRequired: false,
    });
    if (!row) throw new Error("not moved");
    return row;
  }

  /** The routing configuration's version now, as a route read shows it. */
  async function configVersion(store: OperationStoreCore): Promise<string | null> {
    const shop = randomUUID();
    await store.putRoute(shop, "M", { payin: ["a"], payout: [], settlementCurrency: "RUB" });
    return (await store.routeWithProviders(shop, "M", "payin"))?.configVersion ?? null;
  }

  const options = async (store: OperationStoreCore, budgetMs = MINUTE) => ({
    budgetMs,
    forLink: false,
    configVersion: await configVersion(store),
  });

  describe(`${name}: claims`, () => {
    it("claims a new key in routing, at version 0, with its deadline the budget ahead", async () => {
      const { store } = await make();
      const row = claimRow();
      const opts = await options(store);
      const start = Date.now();
      const claim = await store.claim(row, opts);
      expect(claim).toMatchObject({
        claimed: { ...row, status: "routing", version: "0" },
        linkHoldsKey: false,
      });
      expect(claim.existing).toBeUndefined();
      const deadline = claim.claimed?.routing_deadline?.getTime() ?? 0;
      expect(deadline - start).toBeGreaterThanOrEqual(MINUTE - 1_000);
      expect(deadline - start).toBeLessThan(2 * MINUTE);
      expect(await store.findAnyById(row.id)).toEqual(claim.claimed);
    });

    it("answers the row already under the key, whatever the new request's hash, and changes nothing", async () => {
      const { store } = await make();
      const first = claimRow();
      const { claimed } = await store.claim(first, await options(store));
      const again = claimRow({ shop_id: first.shop_id, merchant_operation_id: first.merchant_operation_id });
      const claim = await store.claim({ ...again, request_hash: "another body" }, await options(store, 1));
      expect(claim).toEqual({ existing: claimed, linkHoldsKey: false, configStale: false });
      expect(await store.findAnyById(first.id)).toEqual(claimed);
      expect(await store.findAnyById(again.id)).toBeUndefined();
    });

    it("lets exactly one of concurrent claims of one key claim it; the others answer its row", async () => {
      const { store } = await make();
      const key = claimRow();
      const opts = await options(store);
      const claims = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store.claim(claimRow({ ...key, id: randomUUID(), request_hash: `h${i}` }), opts),
        ),
      );
      const won = claims.filter((c) => c.claimed);
      expect(won).toHaveLength(1);
      // A loser answers the winner's row, or (Postgres: claimed after its snapshot) nothing, and reads it.
      for (const c of claims.filter((c) => !c.claimed)) {
        expect(c).toMatchObject({ linkHoldsKey: false, configStale: false });
        if (c.existing) expect(c.existing).toEqual(won[0]?.claimed);
      }
      expect(await store.findByMop(key.shop_id, key.merchant_operation_id)).toEqual(won[0]?.claimed);
    });

    it("claims no key a flexible link holds, but for the link's own payment", async () => {
      const under = await make();
      const row = claimRow();
      await under.holdKeyForLink(row);
      const opts = await options(under.store);
      expect(await under.store.claim(row, opts)).toEqual({ linkHoldsKey: true, configStale: false });
      expect(await under.store.findAnyById(row.id)).toBeUndefined();
      const own = await under.store.claim(row, { ...opts, forLink: true });
      expect(own).toMatchObject({ claimed: { id: row.id, status: "routing" }, linkHoldsKey: true });
      expect(await under.store.isFlexiblePayment(row.id)).toBe(true);
      expect(
        await under.store.createContext(row.shop_id, row.merchant_operation_id, "M", "payin", 1),
      ).toMatchObject({
        linkHoldsKey: true,
      });
    });

    it("claims no key once the routing configuration moved past the version its route was read at", async () => {
      const { store } = await make();
      const row = claimRow();
      const readAt = await configVersion(store);
      await store.putProvider({
        name: `p-${randomUUID()}`,
        kind: "sandbox",
        baseUrl: "http://x",
        credentials: "c",
        methods: [],
      });
      expect(await store.claim(row, { budgetMs: MINUTE, forLink: false, configVersion: readAt })).toEqual({
        linkHoldsKey: false,
        configStale: true,
      });
      expect(await store.claim(row, { budgetMs: MINUTE, forLink: false, configVersion: null })).toMatchObject(
        {
          configStale: true,
        },
      );
      expect(await store.findAnyById(row.id)).toBeUndefined();
      expect(await store.claim(row, await options(store))).toMatchObject({
        claimed: { id: row.id },
        configStale: false,
      });
    });

    it("inserts once per key and once per id, at the table's defaults", async () => {
      const { store } = await make();
      const row = await inserted(store, { expected_amount: "1000" });
      expect(row).toMatchObject({
        status: "routing",
        version: "0",
        expected_amount: "1000.00",
        actual_amount: "0.00",
        provider: null,
        routing_passed: [],
        cancel_requested: false,
        hosted_page: false,
      });
      const sameKey = { ...row, id: randomUUID() };
      expect(await store.insert(sameKey)).toBeUndefined();
      expect(await store.insert({ ...row, merchant_operation_id: randomUUID() })).toBeUndefined();
      expect(await store.findAnyById(sameKey.id)).toBeUndefined();
    });
  });

  describe(`${name}: the lifecycle`, () => {
    it("records a provider's acceptance with its event and a new version", async () => {
      const under = await make();
      const before = await inserted(under.store);
      const { row, applied } = await under.store.applyFact(before, {
        kind: "provider_accepted",
        provider: "a",
        receiptRequired: false,
      });
      expect(row).toMatchObject({ status: "pending", provider: "a", version: "1" });
      expect(applied.events).toEqual(["payment.pending"]);
      expect(await under.events()).toEqual([`${under.store.prefix}.operations.payment.pending`]);
      expect(await under.store.findAnyById(before.id)).toMatchObject({ status: "pending", version: "1" });
    });

    it("writes nothing for a row whose version moved on, and says so", async () => {
      const under = await make();
      const before = await inserted(under.store);
      await under.store.applyFact(before, {
        kind: "provider_accepted",
        provider: "a",
        receiptRequired: false,
      });
      const late = await under.store.applyFact(before, {
        kind: "provider_accepted",
        provider: "b",
        receiptRequired: false,
      });
      expect(late.row).toBeUndefined();
      expect(await under.store.findAnyById(before.id)).toMatchObject({ provider: "a", version: "1" });
      expect(await under.events()).toHaveLength(1);
    });

    it("writes a declined provider's cascade position without an event, version-checked", async () => {
      const under = await make();
      const before = await inserted(under.store);
      const { row, applied } = await under.store.applyFact(
        before,
        { kind: "provider_declined", provider: "a" },
        { data: { routing_passed: ["a"] } },
      );
      expect(applied.change).toBeNull();
      expect(row).toMatchObject({ status: "routing", routing_passed: ["a"], version: "1" });
      expect(await under.events()).toEqual([]);
      const unchanged = await under.store.applyFact(row as OperationRow, {
        kind: "provider_unknown",
        provider: "b",
      });
      expect(unchanged.row).toBe(row);
    });

    it("refuses to move a pending payment straight to manual_check, and writes nothing", async () => {
      const { store } = await make();
      const row = await pending(store);
      await expect(
        forceTransition(store, row, { status: "manual_check" }, { emit: true }),
      ).rejects.toBeInstanceOf(LifecycleViolationError);
      expect((await store.findAnyById(row.id))?.status).toBe("pending");
    });

    it("refuses to reject a pending payment without its event", async () => {
      const { store } = await make();
      const row = await pending(store);
      await expect(
        forceTransition(store, row, { status: "rejected" }, { emit: false }),
      ).rejects.toBeInstanceOf(LifecycleViolationError);
      expect((await store.findAnyById(row.id))?.status).toBe("pending");
    });

    it("refuses to complete an operation for less than its recorded legs", async () => {
      const { store } = await make();
      const row = await pending(store);
      await store.transaction((tx) =>
        store.insertLeg(tx, {
          id: randomUUID(),
          operationId: row.id,
          provider: "a",
          providerLegId: "leg-1",
          amount: "600.00",
          completedAt: new Date().toISOString(),
        }),
      );
      await expect(
        forceTransition(store, row, { status: "completed", actual_amount: "500.00" }, { emit: true }),
      ).rejects.toBeInstanceOf(LegsDisagreeError);
      const done = await forceTransition(
        store,
        row,
        { status: "completed", actual_amount: "600.00" },
        { emit: true },
      );
      expect(done?.status).toBe("completed");
    });

    it("refuses any write to a completed operation", async () => {
      const { store } = await make();
      const done = await forceTransition(
        store,
        await pending(store),
        { status: "completed", actual_amount: "1000.00" },
        { emit: true },
      );
      if (!done) throw new Error("not completed");
      await expect(
        forceTransition(store, done, { status: "rejected" }, { emit: true }),
      ).rejects.toBeInstanceOf(LifecycleViolationError);
      await expect(
        forceTransition(store, done, { actual_amount: "5.00" }, { emit: false }),
      ).rejects.toBeInstanceOf(LifecycleViolationError);
      await expect(store.applyFact(done, { kind: "expired" })).rejects.toBeInstanceOf(AlreadyTerminalError);
    });

    it("completes with the provider's legs, once: their sum is the actual amount, and a replay adds none", async () => {
      const under = await make();
      const row = await pending(under.store);
      const legs = [
        { id: "l1", amount: "400.00" },
        { id: "l2", amount: "250.50" },
      ];
      const { row: done } = await under.store.applyFact(row, {
        kind: "provider_completed",
        provider: "a",
        legs,
      });
      expect(done).toMatchObject({ status: "completed", actual_amount: "650.50" });
      expect((await under.store.legs(row.id)).map((l) => l.amount).sort()).toEqual(["250.50", "400.00"]);
      expect(
        (await under.store.providerLegs(row.id)).map((l) => [l.provider, l.provider_leg_id]).sort(),
      ).toEqual([
        ["a", "l1"],
        ["a", "l2"],
      ]);
      await expect(
        under.store.applyFact(done as OperationRow, { kind: "provider_completed", provider: "a", legs }),
      ).rejects.toBeInstanceOf(AlreadyTerminalError);
      expect(await under.store.legs(row.id)).toHaveLength(2);
      expect((await under.events()).map((s) => s.split(".").at(-1))).toEqual(["pending", "completed"]);
    });

    it("ends a pool payout the pool paid part of with what was paid when the provider rejects it", async () => {
      const { store } = await make();
      const row = await pending(store, { type: "payout" });
      await store.transaction((tx) =>
        store.insertLeg(tx, {
          id: randomUUID(),
          operationId: row.id,
          provider: "a",
          providerLegId: "pool:1",
          amount: "300.00",
          completedAt: new Date().toISOString(),
        }),
      );
      const { row: done } = await store.applyFact(row, { kind: "provider_rejected", provider: "a" });
      expect(done).toMatchObject({ status: "completed", actual_amount: "300.00" });
    });

    it("records a receipt verdict's leg and completes with the legs' sum", async () => {
      const { store } = await make();
      const awaiting = (
        await store.applyFact(await inserted(store), {
          kind: "provider_accepted",
          provider: "a",
          receiptRequired: true,
        })
      ).row;
      if (!awaiting) throw new Error("not awaiting");
      expect(awaiting.status).toBe("awaiting_confirmation");
      const receiptId = randomUUID();
      const { row } = await store.applyFact(awaiting, {
        kind: "receipt_reviewed",
        verdict: "completed",
        receiptId,
        amount: "950.00",
      });
      expect(row).toMatchObject({ status: "completed", actual_amount: "950.00" });
      const legs = await store.legs(awaiting.id);
      expect(legs).toHaveLength(1);
      expect(legs[0]).toMatchObject({ amount: "950.00", receipt_id: receiptId });
    });

    it("applies a cancel to a pending payment with its event, refuses it in manual_check, and for payouts", async () => {
      const under = await make();
      const { row: cancelled, applied } = await under.store.applyFact(await pending(under.store), {
        kind: "cancel",
        reason: "shop said so",
      });
      expect(cancelled).toMatchObject({
        status: "cancelled",
        cancelled_by_command: true,
        cancel_reason: "shop said so",
      });
      expect(applied.events).toEqual(["payment.cancelled"]);
      expect((await under.events()).at(-1)).toBe(`${under.store.prefix}.operations.payment.cancelled`);
      const awaiting = await forceTransition(
        under.store,
        await inserted(under.store),
        { status: "awaiting_confirmation", provider: "a" },
        { emit: true },
      );
      const check = await forceTransition(
        under.store,
        awaiting as OperationRow,
        { status: "manual_check" },
        { emit: true },
      );
      await expect(
        under.store.applyFact(check as OperationRow, { kind: "cancel", reason: "x" }),
      ).rejects.toBeInstanceOf(NotCancellableError);
      const payout = await pending(under.store, { type: "payout" });
      await expect(under.store.applyFact(payout, { kind: "cancel", reason: "x" })).rejects.toBeInstanceOf(
        NotCancellableError,
      );
    });

    it("reopens only a refused create, from now on", async () => {
      const { store } = await make();
      await expect(store.reopen(await pending(store), {})).rejects.toBeInstanceOf(LifecycleViolationError);
      const old = await inserted(store, { created_at: ago(10 * MINUTE), reconcile_checks: 3 });
      const { row: refused } = await store.applyFact(old, { kind: "refused" });
      expect(refused).toMatchObject({ status: "rejected", provider: null });
      const reopened = await store.reopen(refused as OperationRow, { routing_passed: ["a"] });
      expect(reopened).toMatchObject({ status: "routing", routing_passed: ["a"], reconcile_checks: 0 });
      expect(reopened?.created_at.getTime()).toBeGreaterThan(Date.now() - MINUTE);
      expect(await store.reopen(refused as OperationRow, {})).toBeUndefined();
    });
  });

  describe(`${name}: transactions`, () => {
    it("keeps nothing of a transaction that throws: no row change, no leg, no event, no callback", async () => {
      const under = await make();
      const row = await pending(under.store);
      const failure = new Error("after the writes");
      await expect(
        under.store.transaction(async (tx) => {
          expect(
            await under.store.recordCallback(tx, { provider: "a", callbackId: "cb", operationId: row.id }),
          ).toBe(true);
          const locked = await under.store.lock(row.id, tx);
          await under.store.applyFact(
            locked as OperationRow,
            { kind: "provider_completed", provider: "a", legs: [{ id: "l1", amount: "1000.00" }] },
            { tx },
          );
          expect((await under.store.findAnyById(row.id, tx))?.status).toBe("completed");
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await under.store.findAnyById(row.id)).toEqual(row);
      expect(await under.store.legs(row.id)).toEqual([]);
      expect(await under.events()).toHaveLength(1);
      const replay = await under.store.transaction((tx) =>
        under.store.recordCallback(tx, { provider: "a", callbackId: "cb", operationId: row.id }),
      );
      expect(replay).toBe(true);
      const again = await under.store.transaction((tx) =>
        under.store.recordCallback(tx, { provider: "a", callbackId: "cb", operationId: row.id }),
      );
      expect(again).toBe(false);
    });

    it("queues an event of the caller's with its transaction, and none when the transaction throws", async () => {
      const under = await make();
      const event = (subject: string) => ({ id: randomUUID(), subject, payload: new Uint8Array([1, 2]) });
      const prefix = under.store.prefix;
      await under.store.transaction((tx) => under.store.enqueue(tx, event(`${prefix}.payout.refused`)));
      const failure = new Error("after the event");
      await expect(
        under.store.transaction(async (tx) => {
          await under.store.enqueue(tx, event(`${prefix}.payment.refused`));
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await under.events()).toEqual([`${prefix}.payout.refused`]);
    });

    it("holds a locked row until the transaction ends: of two cancels, the second sees the first", async () => {
      const under = await make();
      const row = await pending(under.store);
      const cancel = (reason: string) =>
        under.store.transaction(async (tx) => {
          const locked = await under.store.lock(row.id, tx);
          if (!locked) throw new Error("gone");
          return under.store.applyFact(locked, { kind: "cancel", reason }, { tx }).then(
            (r) => r.row?.status,
            (err: unknown) => err,
          );
        });
      const outcomes = await Promise.all([cancel("one"), cancel("two")]);
      expect(outcomes.filter((o) => o === "cancelled")).toHaveLength(1);
      expect(outcomes.filter((o) => o instanceof AlreadyTerminalError)).toHaveLength(1);
      expect((await under.events()).filter((s) => s.endsWith(".cancelled"))).toHaveLength(1);
    });
  });

  describe(`${name}: reads and the routing configuration`, () => {
    it("finds a row by key and id within its shop only, and by key across shops newest first", async () => {
      const { store } = await make();
      const mop = randomUUID();
      const older = await inserted(store, { merchant_operation_id: mop, created_at: ago(MINUTE) });
      const newer = await inserted(store, { merchant_operation_id: mop });
      expect(await store.findByMop(older.shop_id, mop)).toEqual(older);
      expect(await store.findById(older.shop_id, older.id)).toEqual(older);
      expect(await store.findById(newer.shop_id, older.id)).toBeUndefined();
      expect((await store.findAnyByMop(mop, 10)).map((r) => r.id)).toEqual([newer.id, older.id]);
      expect(await store.findAnyByMop(mop, 1)).toHaveLength(1);
    });

    it("lists a shop's payments waiting for an operator, oldest first", async () => {
      const { store } = await make();
      const shop = randomUUID();
      const waiting = [];
      for (let i = 0; i < 2; i++) {
        const awaiting = await forceTransition(
          store,
          await inserted(store, { shop_id: shop }),
          { status: "awaiting_confirmation", provider: "a" },
          { emit: true },
        );
        waiting.push(
          await forceTransition(store, awaiting as OperationRow, { status: "manual_check" }, { emit: true }),
        );
        await new Promise((r) => setTimeout(r, 5)); // a later updated_at, not a tie
      }
      await pending(store, { shop_id: shop });
      expect((await store.manualChecks(10, shop)).map((r) => r.id)).toEqual(waiting.map((r) => r?.id));
    });

    it("keeps routes and providers: the route's providers in order, the pool built in, no credentials listed", async () => {
      const { store } = await make();
      const [shop, a, b] = [randomUUID(), `a-${randomUUID()}`, `b-${randomUUID()}`];
      for (const name of [a, b])
        await store.putProvider({
          name,
          kind: "sandbox",
          baseUrl: `http://${name}`,
          credentials: "secret",
          methods: ["M"],
        });
      await store.putProvider({
        name: a,
        kind: "sandbox",
        baseUrl: "http://moved",
        credentials: "secret",
        methods: ["M"],
      });
      await store.putRoute(shop, "M", {
        payin: [b, "self_matching", a],
        payout: [a],
        settlementCurrency: "USDT",
      });
      const route = await store.routeWithProviders(shop, "M", "payin");
      expect(route?.names).toEqual([b, "self_matching", a]);
      expect(route?.providers.map((p) => p?.name)).toEqual([b, "self_matching", a]);
      expect(route?.providers[2]?.baseUrl).toBe("http://moved");
      expect((await store.routeWithProviders(shop, "M", "payout"))?.names).toEqual([a]);
      expect(await store.routeWithProviders(shop, "other", "payin")).toBeUndefined();
      expect(await store.listRoutes(shop)).toMatchObject([{ method: "M", payin: [b, "self_matching", a] }]);
      const listed = (await store.listProviders()).filter((p) => p.name === a);
      expect(listed).toEqual([
        {
          name: a,
          kind: "sandbox",
          base_url: "http://moved",
          methods: ["M"],
          updated_at: expect.any(String),
        },
      ]);
      expect((await store.provider("self_matching"))?.kind).toBe("self_matching");
      expect(await store.provider(`none-${randomUUID()}`)).toBeUndefined();
      const existing = await inserted(store, { shop_id: shop });
      const context = await store.createContext(shop, existing.merchant_operation_id, "M", "payin", MINUTE);
      expect(context).toMatchObject({
        existing: { id: existing.id },
        routing: { names: [b, "self_matching", a] },
        linkHoldsKey: false,
      });
      expect(context.deadline.getTime()).toBeGreaterThan(Date.now() + MINUTE / 2);
    });
  });

  describe(`${name}: the reconciler's queue`, () => {
    const lease = { afterMs: MINUTE, routingGraceMs: MINUTE, leaseMs: 10 * MINUTE, limit: 1000 };
    const mine = (rows: { id: string }[], ids: string[]) =>
      rows.filter((r) => ids.includes(r.id)).map((r) => r.id);

    it("leases a pending row once it is due, not again while the lease runs, and keeps its version", async () => {
      const { store } = await make();
      const due = await pending(store, { created_at: ago(2 * MINUTE) });
      const young = await pending(store);
      const ids = [due.id, young.id];
      const first = await store.claimDue(lease);
      expect(mine(first, ids)).toEqual([due.id]);
      expect(first.find((r) => r.id === due.id)?.version).toBe(due.version);
      expect(mine(await store.claimDue(lease), ids)).toEqual([]);
      await store.scheduleCheck(due.id, null, true);
      const again = await store.claimDue(lease);
      expect(mine(again, ids)).toEqual([due.id]);
      expect(again.find((r) => r.id === due.id)?.reconcile_checks).toBe(1);
    });

    it("picks a routing row only past its deadline and grace, and lets one of two drivers take it over", async () => {
      const { store } = await make();
      const live = await inserted(store, { routing_deadline: new Date(Date.now() + MINUTE) });
      const dead = await inserted(store, { routing_deadline: ago(2 * MINUTE) });
      expect(mine(await store.claimDue(lease), [live.id, dead.id])).toEqual([dead.id]);
      expect(await store.takeOverRouting(live, MINUTE, MINUTE)).toBeUndefined();
      const takers = await Promise.all([
        store.takeOverRouting(dead, MINUTE, MINUTE),
        store.takeOverRouting(dead, MINUTE, MINUTE),
      ]);
      const won = takers.filter((r) => r !== undefined);
      expect(won).toHaveLength(1);
      expect(won[0]).toMatchObject({ status: "routing", version: "1" });
      expect(won[0]?.routing_deadline?.getTime()).toBeGreaterThan(Date.now());
    });

    it("schedules the next look never after a future expiry, and picks an expired row before its first check", async () => {
      const { store } = await make();
      const expiresAt = new Date(Date.now() + 5 * MINUTE);
      const row = await pending(store, { expires_at: expiresAt });
      await store.scheduleCheck(row.id, 60 * MINUTE, false);
      const scheduled = (await store.findAnyById(row.id)) as ReconcileRow | undefined;
      expect(scheduled?.next_check_at?.getTime()).toBe(expiresAt.getTime());
      expect(scheduled?.reconcile_checks).toBe(0);
      expect(mine(await store.claimDue({ ...lease, afterMs: 0 }), [row.id])).toEqual([]);
      await store.scheduleCheck(row.id, MINUTE, true);
      const sooner = (await store.findAnyById(row.id)) as ReconcileRow | undefined;
      expect(sooner?.next_check_at?.getTime()).toBeLessThan(expiresAt.getTime());
      expect(sooner?.reconcile_checks).toBe(1);
      const expired = await pending(store, { expires_at: ago(1_000) });
      expect(mine(await store.claimDue({ ...lease, afterMs: 60 * MINUTE }), [expired.id])).toEqual([
        expired.id,
      ]);
      const deadline = await store.deadlineIn(MINUTE);
      expect(Math.abs(deadline.getTime() - (Date.now() + MINUTE))).toBeLessThan(5_000);
    });

    it("reports a stuck row once, and counts the stuck by status", async () => {
      const { store } = await make();
      const before = await store.countStuck(5 * MINUTE);
      const stuck = await pending(store, { created_at: ago(10 * MINUTE) });
      await pending(store);
      const after = await store.countStuck(5 * MINUTE);
      expect((after.get("pending") ?? 0) - (before.get("pending") ?? 0)).toBe(1);
      expect(mine(await store.markStuck(5 * MINUTE, 1000), [stuck.id])).toEqual([stuck.id]);
      expect(mine(await store.markStuck(5 * MINUTE, 1000), [stuck.id])).toEqual([]);
    });
  });
  describeWithdrawals(name, make);
}
