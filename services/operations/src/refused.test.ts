import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";
import { operationIdFor } from "./create.ts";

// A create no provider accepted is no decision (spec: "a timeout or 503 gives no decision;
// retry the same command"): a retry with the same key and body routes again under the same
// operation id, and answers its own outcome.

let h: OperationsHarness;
/** Stands for a provider that is restarting: every request gets a 503, nothing is recorded. */
let down: Server;
let downUrl: string;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 4_000,
    attemptTimeoutMs: 1_000,
    // A passed-over provider's withdrawal is asked again soon once that provider is back.
    config: { WITHDRAW_INTERVAL_MS: "100", WITHDRAW_BACKOFF_MS: "100", RECONCILE_BACKOFF_MAX_MS: "200" },
  });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 });
  await h.provider("refuser", { mode: "decline" });
  down = createServer((_req, res) => res.writeHead(503).end("restarting"));
  downUrl = await new Promise<string>((resolve) =>
    down.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(down.address() as AddressInfo).port}`)),
  );
}, 60_000);
afterAll(async () => {
  await h?.stop();
  await new Promise((r) => down?.close(r));
});

type Shop = { shopId: string; merchantId: string };

/** A provider of its own for one test, down (answering 503) until `up()`. */
async function flakyProvider(options: Record<string, unknown> = {}) {
  const name = `flaky-${randomUUID().slice(0, 8)}`;
  await h.operations.putProvider({
    name,
    kind: "sandbox",
    baseUrl: downUrl,
    credentials: `secret-${name}-0123456789`,
    methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
  });
  return {
    name,
    up: () =>
      h.provider(
        name,
        { mode: "accept", expires_in_seconds: 900, ...options },
        { mode: "accept", ...options },
      ),
  };
}

/**
 * Waits until the withdrawal at the provider the refused create passed over has ended: a
 * retry does not ask that provider again while it is in flight (its withdraw could reach
 * the create the retry sends).
 */
const withdrawalEnded = (id: string) =>
  eventually(
    () => h.sql<{ status: string }[]>`select status from operations.withdrawals where operation_id = ${id}`,
    (rows) => expect(rows.every((r) => r.status !== "asking")).toBe(true),
  );

const request = (shop: Shop, over: Record<string, unknown> = {}) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: `mop-${randomUUID()}`,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  ...over,
});

async function eventsOf(operationId: string): Promise<OperationEvent[]> {
  const rows = await h.sql<{ payload: Buffer }[]>`select payload from operations.outbox order by seq`;
  return rows
    .map((r) => fromBinary(OperationEventSchema, new Uint8Array(r.payload)))
    .filter((e) => e.operation?.operationId === operationId);
}

/** What the sandbox recorded for our operation id: one row per provider asked. */
async function sandboxView(id: string) {
  const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
  if (res.status === 404) return [];
  expect(res.status).toBe(200);
  const body = (await res.json()) as { received: { provider: string; status: string; requests: number }[] };
  return body.received;
}

async function refused(req: ReturnType<typeof request>) {
  const first = await failureOf(h.operations.createOperation(req));
  expect(first.code).toBe(Code.Unavailable);
  expect(first.info?.code).toBe("no_provider_accepted");
  const id = operationIdFor(req.scope.shopId, req.merchantOperationId);
  const row = await h.store.findAnyById(id);
  expect(row).toMatchObject({ status: "rejected", provider: null });
  // Nothing announced: only the internal event (one per refusal) that frees a pool slot
  // the routing may hold.
  const types = (await eventsOf(id)).map((e) => e.type);
  expect(types.length).toBeGreaterThan(0);
  expect(types.filter((t) => t !== "payment.refused")).toEqual([]);
  return id;
}

describe("a retried create that no provider accepted", () => {
  it("routes again once the provider is back: 200 pending under the same operation id, one pending event", async () => {
    const provider = await flakyProvider();
    const shop = await h.shop([provider.name]);
    const req = request(shop);
    const id = await refused(req);
    // Nothing was created: neither id reads an operation while the refusal stands.
    for (const lookup of [
      { case: "operationId" as const, value: id },
      { case: "merchantOperationId" as const, value: req.merchantOperationId },
    ]) {
      const read = await failureOf(h.operations.getOperation({ scope: shop, id: lookup }));
      expect(read.code).toBe(Code.NotFound);
    }
    // Still down: the retry is refused again, and nothing is announced.
    await refused(req);

    await provider.up();
    await withdrawalEnded(id);
    const retry = await h.operations.createOperation(req);
    expect(retry.replayed).toBe(false);
    expect(retry.operation).toMatchObject({ operationId: id, status: "pending", actualAmount: "0.00" });
    expect(retry.operation?.number).toMatch(/^\d{16}$/);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual([
      "payment.refused",
      "payment.refused",
      "payment.pending",
    ]);
    expect(await sandboxView(id)).toMatchObject([
      { provider: provider.name, status: "pending", requests: 1 },
    ]);
    const read = await h.operations.getOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: req.merchantOperationId },
    });
    expect(read.operation).toMatchObject({ operationId: id, status: "pending" });

    // From now on the ordinary replay: the same operation, no new routing.
    const again = await h.operations.createOperation(req);
    expect(again.replayed).toBe(true);
    expect(again.operation).toEqual(retry.operation);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual([
      "payment.refused",
      "payment.refused",
      "payment.pending",
    ]);
    expect(await sandboxView(id)).toMatchObject([{ requests: 1 }]);
  });

  it("routes to a provider added to the route since, and a provider that declined declines again", async () => {
    const shop = await h.shop(["refuser"]);
    const req = request(shop);
    const id = await refused(req);
    await h.operations.putRoute({
      shopId: shop.shopId,
      method: "WT_RUB_C2C",
      payin: ["refuser", "acme"],
      payout: ["refuser", "acme"],
      settlementCurrency: "RUB",
    });
    const retry = await h.operations.createOperation(req);
    expect(retry.operation).toMatchObject({ operationId: id, status: "pending" });
    const seen = await sandboxView(id);
    expect(seen.map((r) => [r.provider, r.status]).sort()).toEqual([
      ["acme", "pending"],
      ["refuser", "rejected"],
    ]);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.refused", "payment.pending"]);
  });

  it("answers 412 to a retry with another body, and routes nothing", async () => {
    const provider = await flakyProvider();
    const shop = await h.shop([provider.name]);
    const req = request(shop);
    const id = await refused(req);
    await provider.up();
    const other = await failureOf(h.operations.createOperation({ ...req, amount: "1000.01" }));
    expect(other.code).toBe(Code.FailedPrecondition);
    expect(other.info).toMatchObject({ code: "idempotency_conflict", field: "merchant_operation_id" });
    expect(await sandboxView(id)).toEqual([]);
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "rejected", provider: null });
  });

  it("routes once when concurrent retries race: one drives it, the others answer the same operation (five rounds)", async () => {
    for (let round = 0; round < 5; round++) {
      // The provider answers 300 ms late, so the other retries meet the routing in progress.
      const provider = await flakyProvider({ delay_ms: 300 });
      const shop = await h.shop([provider.name]);
      const req = request(shop);
      const id = await refused(req);
      await provider.up();
      await withdrawalEnded(id);
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, () => h.operations.createOperation(req)),
      );
      const ok = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      // A retry that loses only ever gets a retryable answer, never another operation.
      for (const r of results)
        if (r.status === "rejected")
          expect(errorInfo(r.reason)?.code).toMatch(/^(dependency_unavailable|no_provider_accepted)$/);
      expect(ok.length).toBeGreaterThan(0);
      expect(ok.filter((a) => !a.replayed)).toHaveLength(1);
      for (const a of ok) {
        expect(a.operation).toMatchObject({ operationId: id, status: "pending" });
        expect(a.operation?.number).toBe(ok[0]?.operation?.number);
      }
      expect(await sandboxView(id)).toMatchObject([{ provider: provider.name, requests: 1 }]);
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.refused", "payment.pending"]);
    }
  }, 60_000);

  it("a cancel accepted after the refusal wins: the retry answers the cancelled payment, no provider is asked", async () => {
    const provider = await flakyProvider();
    const shop = await h.shop([provider.name]);
    const req = request(shop);
    const id = await refused(req);
    const cancel = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: req.merchantOperationId },
      reason: "merchant gave up",
    });
    expect(cancel.outcome).toBe("cancelled");
    expect(cancel.operation).toMatchObject({ operationId: id, status: "cancelled" });
    // Idempotent: the same decision again, nothing further.
    const again = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: req.merchantOperationId },
    });
    expect(again.outcome).toBe("cancelled");

    await provider.up();
    const retry = await h.operations.createOperation(req);
    expect(retry.replayed).toBe(true);
    expect(retry.operation).toMatchObject({ operationId: id, status: "cancelled" });
    expect(retry.operation?.number).toBeUndefined();
    expect(await sandboxView(id)).toEqual([]);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payment.refused", "payment.cancelled"]);
  });

  it("a payout whose provider answers 5xx stays unresolved, its total reserved, until that provider answers; not found there, its key withdrawn (a tombstone), it is refused with the reserve released, and a retry of the key is refused there again", async () => {
    const provider = await flakyProvider();
    const shop = await h.shop([provider.name], { percent: "1", fixed: "0" });
    const req = request(shop, { type: "payout", number: "4111111111111111", amount: "500.00" });
    const balance = async () =>
      (await h.ledger.getBalances({ shopId: shop.shopId })).balances.find((b) => b.currency === "RUB");
    // A 5xx is no decline: the provider may have taken the payout, so it is asked its
    // status (a 503 again) and nobody else is asked; the create answers 503.
    const first = await failureOf(h.operations.createOperation(req));
    expect(first).toMatchObject({ code: Code.Unavailable, info: { code: "dependency_unavailable" } });
    const id = operationIdFor(req.scope.shopId, req.merchantOperationId);
    expect(await h.store.findAnyById(id)).toMatchObject({
      status: "routing",
      routing_unresolved: provider.name,
    });
    // The reserve was posted before the provider was asked, and stays while unresolved.
    expect(await balance()).toMatchObject({ balance: "-505.00", reserved: "505.00" });
    expect(await eventsOf(id)).toEqual([]);

    // Once up, the provider has no record of the payout, and confirms its withdrawal by
    // key: the retry that takes the routing over finds nobody holding it and records the
    // refusal, its reserve released before the answer. The key stays withdrawn there (a
    // create of it is refused), so a later retry is refused again. Each attempt blocks for
    // at most the budget, so the loop is bounded.
    await provider.up();
    const answers: string[] = [];
    for (let attempt = 0; attempt < 10 && !answers.includes("no_provider_accepted"); attempt++) {
      await h.operations.createOperation(req).catch((err: unknown) => {
        answers.push(errorInfo(err)?.code ?? String(err));
      });
    }
    expect(answers).toContain("no_provider_accepted");
    expect(answers.every((a) => a === "dependency_unavailable" || a === "no_provider_accepted")).toBe(true);
    expect(await balance()).toMatchObject({ balance: "0.00", reserved: "0.00" });
    expect(await sandboxView(id)).toEqual([
      expect.objectContaining({ provider: provider.name, status: "withdrawn" }),
    ]);
    const again = await failureOf(h.operations.createOperation(req));
    expect(again.info?.code).toBe("no_provider_accepted");
    expect(await balance()).toMatchObject({ balance: "0.00", reserved: "0.00" });
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["payout.refused", "payout.refused"]);
  }, 40_000);
});
