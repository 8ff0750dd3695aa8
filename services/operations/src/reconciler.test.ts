import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { createLogger, type Logger } from "@gw/log";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventually,
  forceTransition,
  insertAbandonedRouting,
  type OperationsHarness,
  startHarness,
} from "../test/harness.ts";
import { operationIdFor } from "./create.ts";
import { stuckOperations } from "./reconciler.ts";
import type { ReconcileRow } from "./repository/operations.ts";

let h: OperationsHarness;

const DAY_MS = 24 * 3_600_000;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 4_000,
    attemptTimeoutMs: 1_000,
    // The service's own loop runs fast here: it looks every 100 ms at operations older
    // than 1.5 s and reports those older than three days as stuck.
    config: {
      RECONCILE_INTERVAL_MS: "100",
      RECONCILE_AFTER_MS: "1500",
      RECONCILE_BACKOFF_MS: "300",
      RECONCILE_BACKOFF_MAX_MS: "2000",
      RECONCILE_ALERT_AFTER_MS: String(3 * DAY_MS),
      // A payout unresolved this long goes to the operator queue.
      PAYOUT_OPERATOR_HORIZON_MS: "3000",
    },
  });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 });
  await h.provider("brief", { mode: "accept", expires_in_seconds: 1 });
  await h.provider("refuser", { mode: "decline" });
  await h.provider("brief-keeps", { mode: "accept", expires_in_seconds: 1, withdraw: "unsupported" });
  await h.provider("brief-payouts", { mode: "accept" }, { mode: "accept", expires_in_seconds: 1 });
}, 60_000);
afterAll(() => h?.stop());

type Shop = { shopId: string; merchantId: string };

const paymentRequest = (shop: Shop, over: Record<string, unknown> = {}) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: `mop-${randomUUID()}`,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  ...over,
});

/** The events operations queued for one operation, in commit order. */
async function eventsOf(operationId: string): Promise<OperationEvent[]> {
  const rows = await h.sql<{ payload: Buffer }[]>`
    select payload from operations.outbox order by seq`;
  return rows
    .map((r) => fromBinary(OperationEventSchema, new Uint8Array(r.payload)))
    .filter((e) => e.operation?.operationId === operationId);
}

const read = (shop: Shop, id: string) =>
  h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } });

/** What the sandbox's providers hold under our operation id. */
async function sandboxView(id: string) {
  const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    received: {
      status: string;
      settled_at?: string;
      requests: number;
      callbacks: { delivered_at?: string; attempts: number }[];
    }[];
  };
  return body.received;
}

async function createPending(shop: Shop): Promise<string> {
  const { operation } = await h.operations.createOperation(paymentRequest(shop));
  expect(operation?.status).toBe("pending");
  return operation?.operationId ?? "";
}

/** A logger that records warnings and drops everything else. */
function warningsLogger(): { logger: Logger; warnings: { obj: Record<string, unknown>; msg: string }[] } {
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  const logger = Object.create(createLogger("operations-test", "silent")) as Logger;
  logger.warn = ((obj: Record<string, unknown>, msg: string) => {
    warnings.push({ obj, msg });
  }) as Logger["warn"];
  return { logger, warnings };
}

describe("reconciler", () => {
  it("completes a payment the provider settled whose callback never arrived, with its legs and one event", async () => {
    const shop = await h.shop(["acme"]);
    h.callbacks("refuse");
    const id = await createPending(shop);
    const settled = await h.settle(id, { legs: ["600.00", "400.00"] });
    expect(((await settled.json()) as { delivery: { delivered: boolean } }).delivery.delivered).toBe(false);

    const done = await eventually(
      () => read(shop, id),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("1000.00");
    expect(done.receipts.map((r) => r.amount).sort()).toEqual(["400.00", "600.00"]);
    expect(done.receiptEvidenceStatus).toBe("complete");
    const completed = (await eventsOf(id)).filter((e) => e.type === "payment.completed");
    expect(completed).toHaveLength(1);
    expect(completed[0]?.receipts).toHaveLength(2);

    // The provider's retried callback arrives after all and changes nothing.
    h.callbacks("forward");
    await eventually(
      () => sandboxView(id),
      (v) => expect(v[0]?.callbacks[0]?.delivered_at).toBeDefined(),
      20_000,
    );
    expect((await eventsOf(id)).filter((e) => e.type === "payment.completed")).toHaveLength(1);
    expect((await read(shop, id)).receipts).toHaveLength(2);
  }, 40_000);

  it("completes a payment the provider reports completed without legs with evidence partial, when the callback never arrived", async () => {
    const shop = await h.shop(["acme"]);
    h.callbacks("refuse");
    const id = await createPending(shop);
    const settled = await h.settle(id, { legs: [] });
    expect(((await settled.json()) as { delivery: { delivered: boolean } }).delivery.delivered).toBe(false);
    const done = await eventually(
      () => read(shop, id),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    h.callbacks("forward");
    expect(done.operation?.actualAmount).toBe("1000.00");
    expect(done.receiptEvidenceStatus).toBe("partial");
    expect(done.receipts.map((r) => [r.id, r.amount, r.receiptUrl])).toEqual([[id, "1000.00", undefined]]);
    const completed = (await eventsOf(id)).filter((e) => e.type === "payment.completed");
    expect(completed).toHaveLength(1);
    expect(completed[0]?.receipts.map((r) => r.amount)).toEqual(["1000.00"]);
  }, 40_000);

  it("expires a payment past its expires_at that the provider still reports pending once withdrawn there, with one event", async () => {
    const shop = await h.shop(["brief"]);
    h.callbacks("forward");
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    const id = operation?.operationId ?? "";
    expect(operation?.expiresAt).toBeDefined();

    const done = await eventually(
      () => read(shop, id),
      (r) => expect(r.operation?.status).toBe("rejected"),
    );
    expect(done.operation?.actualAmount).toBe("0.00");
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.pending", "payment.rejected"]);
    // The requisites were withdrawn first: nothing can be paid into them any more.
    const [held] = await sandboxView(id);
    expect(held?.status).toBe("withdrawn");
  });

  it("keeps asking about an expired payment whose provider cannot withdraw it, and leaves it pending", async () => {
    const shop = await h.shop(["brief-keeps"]);
    const id = await createPending(shop);
    const asked = await eventually(
      async () => (await h.store.findAnyById(id)) as ReconcileRow,
      (row) => expect(row.reconcile_checks).toBeGreaterThanOrEqual(2),
    );
    expect(asked.status).toBe("pending");
    expect(asked.expires_at?.getTime()).toBeLessThan(Date.now());
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.pending"]);
    const [held] = await sandboxView(id);
    expect(held?.status).toBe("pending");
  });

  it("never rejects a payout on its local expires_at: only the provider's rejection ends it", async () => {
    const shop = await h.shop(["brief-payouts"]);
    const { operation } = await h.operations.createOperation(
      paymentRequest(shop, { type: "payout", number: "4111111111111111" }),
    );
    const id = operation?.operationId ?? "";
    expect(operation?.status).toBe("pending");
    expect(operation?.expiresAt).toBeDefined();
    const asked = await eventually(
      async () => (await h.store.findAnyById(id)) as ReconcileRow,
      (row) => expect(row.reconcile_checks).toBeGreaterThanOrEqual(2),
    );
    expect(asked.status).toBe("pending");
    expect(asked.expires_at?.getTime()).toBeLessThan(Date.now());
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payout.pending"]);

    h.callbacks("forward");
    expect((await h.settle(id, { status: "rejected" })).status).toBe(200);
    await eventually(
      () => read(shop, id),
      (r) => expect(r.operation?.status).toBe("rejected"),
    );
  });

  it("leaves a payment the provider reports pending before its expiry and asks again only after a backoff", async () => {
    const shop = await h.shop(["acme"]);
    const id = await createPending(shop);
    const replica = h.reconciler({ afterMs: 0, backoffMs: 60_000, backoffMaxMs: 600_000 });
    await replica.runOnce();
    const once = (await h.store.findAnyById(id)) as ReconcileRow;
    expect(once.status).toBe("pending");
    expect(once.reconcile_checks).toBe(1);
    expect(once.next_check_at?.getTime()).toBeGreaterThan(once.created_at.getTime() + 30_000);

    await replica.runOnce();
    const twice = (await h.store.findAnyById(id)) as ReconcileRow;
    expect(twice.reconcile_checks).toBe(1);
    expect(twice.version).toBe(once.version);
    expect(await eventsOf(id)).toHaveLength(1);
  });

  it("applies a callback and a reconciler racing on the same operation once (8 runs)", async () => {
    const shop = await h.shop(["acme"]);
    const replica = h.reconciler({ afterMs: 0 });
    for (let run = 0; run < 8; run++) {
      h.callbacks("hold");
      const id = await createPending(shop);
      const settling = h.settle(id, { legs: ["250.00", "250.00", "500.00"] });
      await eventually(
        async () => h.held,
        (n) => expect(n).toBe(1),
      );
      // Vary who starts first so both orders are exercised.
      const lag = () => new Promise((r) => setTimeout(r, Math.floor(Math.random() * 15)));
      await Promise.all([
        (run % 2 === 0 ? lag() : Promise.resolve()).then(() => h.releaseCallbacks()),
        (run % 2 === 1 ? lag() : Promise.resolve()).then(() => replica.runOnce()),
      ]);
      expect(
        ((await (await settling).json()) as { delivery: { delivered: boolean } }).delivery.delivered,
      ).toBe(true);

      const done = await read(shop, id);
      expect(done.operation?.status).toBe("completed");
      expect(done.operation?.actualAmount).toBe("1000.00");
      expect(done.receipts).toHaveLength(3);
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.pending", "payment.completed"]);
    }
  }, 60_000);

  it("never applies twice when two reconcilers run at once over the same operations", async () => {
    const shop = await h.shop(["acme"]);
    h.callbacks("refuse");
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const id = await createPending(shop);
      await h.settle(id, { legs: ["300.00", "700.00"] });
      ids.push(id);
    }
    const a = h.reconciler({ afterMs: 0, batchSize: 7 });
    const b = h.reconciler({ afterMs: 0, batchSize: 7 });
    const passes = await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()]);
    // Whatever each pass took, no operation was completed by more than one of them.
    expect(passes.reduce((n, p) => n + p.completed, 0)).toBeLessThanOrEqual(ids.length);

    for (const id of ids) {
      const done = await eventually(
        () => read(shop, id),
        (r) => expect(r.operation?.status).toBe("completed"),
      );
      expect(done.operation?.actualAmount).toBe("1000.00");
      expect(done.receipts).toHaveLength(2);
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.pending", "payment.completed"]);
    }
    const legs = await h.sql<{ n: number }[]>`
      select count(*)::int as n from operations.legs where operation_id = any(${ids}::uuid[])`;
    expect(legs[0]?.n).toBe(2 * ids.length);
    h.callbacks("forward");
  }, 60_000);

  describe("a routing row left by a create whose process died", () => {
    async function abandonedRouting(shop: Shop, deadline = new Date(Date.now() - 60_000)) {
      const req = paymentRequest(shop);
      const id = await insertAbandonedRouting(h.store, shop, req, deadline);
      return { req, id };
    }

    it("is driven to pending with requisites and its event, and a retry of the create replays it", async () => {
      const shop = await h.shop(["refuser", "acme"]);
      const { req, id } = await abandonedRouting(shop);
      const row = await eventually(
        () => h.store.findAnyById(id),
        (r) => expect(r?.status).toBe("pending"),
      );
      expect(row?.provider).toBe("acme");
      expect(row?.number).toMatch(/^\d{16}$/);
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.pending"]);
      expect((await sandboxView(id)).map((r) => r.status)).toEqual(["rejected", "pending"]);

      const retry = await h.operations.createOperation(req);
      expect(retry.replayed).toBe(true);
      expect(retry.operation?.number).toBe(row?.number);
    });

    it("is recorded rejected without an event when no provider of the route accepts", async () => {
      const shop = await h.shop(["refuser"]);
      const { req, id } = await abandonedRouting(shop);
      const row = await eventually(
        () => h.store.findAnyById(id),
        (r) => expect(r?.status).toBe("rejected"),
      );
      expect(row?.provider).toBeNull();
      // Nothing announced: only the internal event that frees a pool slot it may hold.
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.refused"]);
      const retry = await h.operations.createOperation(req).catch((err: unknown) => err);
      expect(errorInfo(retry)?.code).toBe("no_provider_accepted");
    });

    /** A payout's `routing` row whose driver is gone, at the given cascade position. */
    async function abandonedPayout(
      shop: Shop,
      position: { routing_passed: string[]; routing_unresolved: string | null },
    ) {
      const req = paymentRequest(shop, { type: "payout", number: "4111111111111111" });
      const id = await insertAbandonedRouting(h.store, shop, req, undefined, position);
      return { req, id };
    }

    it("goes on from its stored position: a provider passed over is not asked again, and one whose answer was unknown is asked its status before anyone else", async () => {
      const first = `first-${randomUUID().slice(0, 8)}`;
      await h.provider(first, { mode: "accept" }, { mode: "accept" });
      // `refuser` is passed over; `first` had no answer and never received it (its status
      // is not_found, and it confirms the withdrawal of the key: a tombstone), so the
      // cascade goes on to acme; a restart would have given it to first.
      const shop = await h.shop(["refuser", first, "acme"]);
      const { req, id } = await abandonedPayout(shop, {
        routing_passed: ["refuser"],
        routing_unresolved: first,
      });
      const row = await eventually(
        () => h.store.findAnyById(id),
        (r) => expect(r?.status).toBe("pending"),
      );
      expect(row).toMatchObject({
        provider: "acme",
        routing_passed: ["refuser", first],
        routing_unresolved: null,
      });
      const held = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
      const body = (await held.json()) as {
        received: { provider: string; status: string; requests: number }[];
      };
      // `first` holds only the tombstone of the key (no create ever reached it); acme the payout.
      expect(body.received.map((r) => [r.provider, r.status, r.requests])).toEqual([
        [first, "withdrawn", 0],
        ["acme", "pending", 1],
      ]);
      const retry = await h.operations.createOperation(req);
      expect(retry).toMatchObject({ replayed: true, operation: { status: "pending" } });
    });

    it("keeps a payout at a provider that answers not_found and offers no withdrawal, asking nobody after it, and puts it in the operator queue past the horizon", async () => {
      const keeper = `keeper-${randomUUID().slice(0, 8)}`;
      // Records creates ten minutes late, and cannot withdraw a key it has no record of.
      await h.provider(
        keeper,
        { mode: "accept" },
        {
          mode: "accept",
          withdraw: "unsupported",
          faults: { seed: "r", slow_ms: 600_000, create: { record_after_delay: 1 } },
        },
      );
      const shop = await h.shop([keeper, "acme"]);
      const { id } = await abandonedPayout(shop, { routing_passed: [], routing_unresolved: keeper });
      const queued = await eventually(
        () => h.sql<{ status: string; routing_unresolved: string | null; operator_queued_at: Date | null }[]>`
          select status, routing_unresolved, operator_queued_at from operations.operations where id = ${id}`,
        (rows) => expect(rows[0]?.operator_queued_at).not.toBeNull(),
        15_000,
      );
      expect(queued[0]).toMatchObject({ status: "routing", routing_unresolved: keeper });
      const held = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
      expect(held.status).toBe(404);
      const [reserve] = await h.sql<{ state: string }[]>`
        select state from ledger.payout_reserves where operation_id = ${id}`;
      expect(reserve?.state).toBe("reserved");

      // What the operator reads (ListOperatorQueue): this payout, with its provider.
      const [row] = await h.sql<{ merchant_operation_id: string; reconcile_checks: number }[]>`
        select merchant_operation_id, reconcile_checks from operations.operations where id = ${id}`;
      const { payouts } = await h.operations.listOperatorQueue({});
      expect(payouts.every((p) => p.operatorQueuedAt !== "")).toBe(true);
      const listed = payouts.find((p) => p.operationId === id);
      expect(listed).toMatchObject({
        shopId: shop.shopId,
        merchantOperationId: row?.merchant_operation_id,
        amount: "1000.00",
        currency: "RUB",
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        operatorQueuedAt: new Date(queued[0]?.operator_queued_at ?? 0).toISOString(),
        unresolvedProvider: keeper,
        passedProviders: [],
      });
      expect(listed?.reconcileChecks).toBeGreaterThanOrEqual(1);
      await expect(h.operations.listOperatorQueue({ limit: 501 })).rejects.toThrow(/limit/);
    }, 30_000);

    it("lists in the operator queue only payouts still routing", async () => {
      const shop = await h.shop(["acme"]);
      const { id } = await abandonedPayout(shop, { routing_passed: ["refuser"], routing_unresolved: null });
      const row = await eventually(
        () => h.store.findAnyById(id),
        (r) => expect(r?.status).toBe("pending"),
      );
      // Queued once (as the reconciler did), then resolved by its provider: out of the queue.
      await h.sql`update operations.operations set operator_queued_at = now() where id = ${row?.id ?? ""}`;
      const { payouts } = await h.operations.listOperatorQueue({ limit: 500 });
      expect(payouts.map((p) => p.operationId)).not.toContain(id);
    });

    it("makes a payout whose unknown answer turns out pending at its provider that provider's, asking nobody after it", async () => {
      const late = `late-${randomUUID().slice(0, 8)}`;
      await h.provider(late, { mode: "accept" }, { mode: "accept" });
      const shop = await h.shop([late, "acme"]);
      const { id } = await abandonedPayout(shop, { routing_passed: [], routing_unresolved: late });
      // The provider received it (the create whose answer was lost), so its status is pending.
      const taken = await fetch(`${h.sandboxUrl}/providers/${late}/v1/payouts`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${(await h.store.provider(late))?.credentials}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          reference: id,
          method: "WT_RUB_C2C",
          amount: "1000.00",
          currency: "RUB",
          callback_url: "http://127.0.0.1:9/unused",
          destination: { number: "4111111111111111" },
        }),
      });
      expect(taken.status).toBe(200);
      const row = await eventually(
        () => h.store.findAnyById(id),
        (r) => expect(r?.status).toBe("pending"),
      );
      expect(row?.provider).toBe(late);
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payout.pending"]);
      const held = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
      const body = (await held.json()) as { received: { provider: string }[] };
      expect(body.received.map((r) => r.provider)).toEqual([late]);
    });

    it("is taken over only when the database's clock is past its deadline and grace, by one driver", async () => {
      const shop = await h.shop(["acme"]);
      const { id } = await abandonedRouting(shop, new Date(Date.now() + 60_000));
      const fresh = await h.store.findAnyById(id);
      expect(fresh && (await h.store.takeOverRouting(fresh, 60_000, 5_000))).toBeUndefined();
      await h.sql`
        update operations.operations set routing_deadline = now() - interval '1 hour' where id = ${id}`;
      const stale = await h.store.findAnyById(id);
      if (!stale) throw new Error("row vanished");
      const [one, two] = await Promise.all([
        h.store.takeOverRouting(stale, 60_000, 5_000),
        h.store.takeOverRouting(stale, 60_000, 5_000),
      ]);
      expect([one, two].filter(Boolean)).toHaveLength(1);
      expect((one ?? two)?.routing_deadline?.getTime()).toBeGreaterThan(Date.now());
    });

    it("with a cancel accepted before it went stale, is recorded cancelled by a retried create without asking any provider", async () => {
      const shop = await h.shop(["acme"]);
      // Still within its deadline: the cancel meets a create in progress and is accepted.
      const { req, id } = await abandonedRouting(shop, new Date(Date.now() + 60_000));
      const cancel = await h.operations.cancelOperation({
        scope: shop,
        id: { case: "operationId", value: id },
        reason: "payer left",
      });
      expect(cancel.outcome).toBe("cancelled");
      // The create's process died: its deadline passes with the cancel pending.
      await h.sql`
        update operations.operations set routing_deadline = now() - interval '1 minute' where id = ${id}`;

      const retry = await h.operations.createOperation(req);
      expect(retry.operation?.status).toBe("cancelled");
      expect(retry.operation?.number ?? "").toBe("");
      const row = await h.store.findAnyById(id);
      expect(row).toMatchObject({ status: "cancelled", provider: null, number: null });
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.cancelled"]);
      const asked = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
      expect(asked.status).toBe(404);
    });
  });

  describe("operations stuck past the alert age", () => {
    async function oldPending(shop: Shop, ageMs: number) {
      const mop = `mop-${randomUUID()}`;
      const id = operationIdFor(shop.shopId, mop);
      await h.store.insert({
        id,
        shop_id: shop.shopId,
        merchant_id: shop.merchantId,
        merchant_operation_id: mop,
        request_hash: "0".repeat(64),
        type: "payment",
        status: "pending",
        method: "WT_RUB_C2C",
        currency: "RUB",
        expected_amount: "100.00",
        client_id: "client-1",
        provider: "acme",
        created_at: new Date(Date.now() - ageMs),
        updated_at: new Date(Date.now() - ageMs),
      });
      return id;
    }

    it("logs one warning per stuck operation, however many passes see it", async () => {
      const shop = await h.shop(["acme"]);
      // Two days old: stuck for this replica (one day), not yet for the service's loop (three).
      const id = await oldPending(shop, 2 * DAY_MS);
      const { logger, warnings } = warningsLogger();
      const replica = h.reconciler({ alertAfterMs: DAY_MS }, logger);
      const other = h.reconciler({ alertAfterMs: DAY_MS }, logger);
      await Promise.all([replica.runOnce(), other.runOnce()]);
      await replica.runOnce();
      const stuck = warnings.filter((w) => w.obj.operationId === id && w.msg.startsWith("operation stuck"));
      expect(stuck).toHaveLength(1);
      expect(stuck[0]?.obj).toMatchObject({ status: "pending", provider: "acme" });
      const row = (await h.store.findAnyById(id)) as ReconcileRow;
      expect(row.stuck_alerted_at).not.toBeNull();
      expect(row.status).toBe("pending");
    });

    it("counts them in the operations_stuck gauge until they settle", async () => {
      const shop = await h.shop(["acme"]);
      const pendingStuck = async () =>
        (await stuckOperations.get()).values.find((v) => v.labels.status === "pending")?.value;
      const id = await oldPending(shop, 4 * DAY_MS);
      await eventually(pendingStuck, (n) => expect(n).toBe(1));

      const row = await h.store.findAnyById(id);
      if (!row) throw new Error("row vanished");
      expect(await forceTransition(h.store, row, { status: "rejected" }, { emit: true })).toBeDefined();
      await eventually(pendingStuck, (n) => expect(n).toBe(0));
    });
  });
});
