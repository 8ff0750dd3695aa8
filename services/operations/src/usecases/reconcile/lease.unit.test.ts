import { randomUUID } from "node:crypto";
import { createLogger } from "@gw/log";
import { describe, expect, it } from "vitest";
import { FakeLedger } from "../../../test/fakes/ledger.ts";
import { FakeReceipts } from "../../../test/fakes/receipts.ts";
import { MemoryConnector } from "../../connectors/memory.ts";
import { operationIdFor } from "../../domain/create-request.ts";
import { MemoryOperationStore } from "../../repository/memory/store.ts";
import type { OperationStore } from "../../repository/operations.ts";
import type { ReconcilerDeps } from "./options.ts";
import { Reconciler } from "./reconciler.ts";

/**
 * A reconciler replica that dies mid-pass holds the rows it leased until their lease runs
 * out: the lease must cover one handling, not a whole batch, or a crash leaves creates
 * `routing` for minutes (the default budget and batch once made it 255 s).
 */

const logger = createLogger("operations-reconcile-lease-unit", "silent");
const MINUTE = 60_000;

/** The store as a replica that died right after leasing sees it: every call but the lease hangs. */
function diesAfterLease(store: OperationStore): { store: OperationStore; leased: Promise<unknown> } {
  let leased!: (rows: unknown) => void;
  const done = new Promise((resolve) => {
    leased = resolve;
  });
  const dying = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === "claimDue")
        return (o: Parameters<OperationStore["claimDue"]>[0]) =>
          value.call(target, o).then((rows: unknown) => {
            leased(rows);
            return rows;
          });
      return typeof value === "function" ? () => new Promise(() => {}) : value;
    },
  });
  return { store: dying, leased: done };
}

describe("the reconciler's lease", () => {
  /** A shop routed to the memory provider `a`, and `n` creates whose processes died before asking anyone. */
  async function world(n: number, batchSize = 100) {
    const clock = { now: Date.now() };
    const store = new MemoryOperationStore("memory", { clock: () => new Date(clock.now) });
    const connector = new MemoryConnector();
    await store.putProvider(connector.register("a", {}));
    const shopId = randomUUID();
    await store.putRoute(shopId, "WT_RUB_C2C", { payin: ["a"], payout: ["a"], settlementCurrency: "RUB" });
    const mops: string[] = [];
    for (let i = 0; i < n; i++) {
      const mop = `mop-${randomUUID()}`;
      mops.push(mop);
      await store.insert({
        id: operationIdFor(shopId, mop),
        shop_id: shopId,
        merchant_id: randomUUID(),
        merchant_operation_id: mop,
        request_hash: "h",
        type: "payment",
        status: "routing",
        method: "WT_RUB_C2C",
        currency: "RUB",
        expected_amount: "1000.00",
        client_id: "client-1",
        settlement_currency: "RUB",
        commission_percent: "0",
        commission_fixed: "0",
        routing_deadline: new Date(clock.now - MINUTE),
      });
    }
    const deps: ReconcilerDeps = {
      store,
      ledger: new FakeLedger().client(),
      receipts: new FakeReceipts().client(),
      connectorFor: (kind) => (kind === "memory" ? connector : undefined),
      callbackBaseUrl: "http://edge.invalid",
      // The service's defaults, which the lease is sized from.
      budgetMs: 15_000,
      attemptTimeoutMs: 5_000,
      logger,
    };
    const options = {
      intervalMs: 5_000,
      afterMs: 10 * MINUTE,
      backoffMs: 1_000,
      backoffMaxMs: 8_000,
      batchSize,
      alertAfterMs: 24 * 60 * MINUTE,
      operatorHorizonMs: 24 * 60 * MINUTE,
    };
    const statuses = async () =>
      Promise.all(mops.map(async (mop) => (await store.findByMop(shopId, mop))?.status));
    return { clock, deps, options, statuses, shopId, mops, store };
  }

  it("hands a routing create held by a dead replica to another within a minute, and not while it may still be in hand", async () => {
    const w = await world(1);
    const dying = diesAfterLease(w.deps.store);
    void new Reconciler({ ...w.deps, store: dying.store }, w.options).runOnce();
    await dying.leased;

    const survivor = new Reconciler(w.deps, w.options);
    // Still within one handling's time: the row may still be in the first replica's hands.
    w.clock.now += 20_000;
    expect((await survivor.runOnce()).claimed).toBe(0);
    // One handling (the create budget) and its margin later, the row is the survivor's.
    w.clock.now += MINUTE;
    const pass = await survivor.runOnce();
    expect({ claimed: pass.claimed, routed: pass.routed }).toEqual({ claimed: 1, routed: 1 });
    const row = await w.store.findByMop(w.shopId, w.mops[0] ?? "");
    expect({ status: row?.status, provider: row?.provider }).toEqual({ status: "pending", provider: "a" });
  });

  it("leases row by row up to its batch in one pass, more rows than it handles at once", async () => {
    const w = await world(20, 12);
    const pass = await new Reconciler(w.deps, w.options).runOnce();
    expect({ claimed: pass.claimed, routed: pass.routed }).toEqual({ claimed: 12, routed: 12 });
    const statuses = await w.statuses();
    expect(statuses.filter((s) => s === "pending")).toHaveLength(12);
    expect(statuses.filter((s) => s === "routing")).toHaveLength(8);
    const next = await new Reconciler(w.deps, w.options).runOnce();
    expect({ claimed: next.claimed, routed: next.routed }).toEqual({ claimed: 8, routed: 8 });
    expect(new Set(await w.statuses())).toEqual(new Set(["pending"]));
  });

  it("ends its pass with the rows in hand when leasing the next one fails, and leases none after it returned", async () => {
    const w = await world(40);
    let claims = 0;
    const flaky = new Proxy(w.deps.store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop === "claimDue")
          return (o: Parameters<OperationStore["claimDue"]>[0]) =>
            ++claims === 2 ? Promise.reject(new Error("connection reset")) : value.call(target, o);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const pass = await new Reconciler({ ...w.deps, store: flaky }, w.options).runOnce();
    const claimsAtReturn = claims;
    // Whatever it leased, it handled, before answering.
    expect(pass.routed).toBe(pass.claimed);
    await new Promise((r) => setTimeout(r, 100));
    expect(claims).toBe(claimsAtReturn);
  });
});
