import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";
import { operationIdFor } from "./create.ts";

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 });
  await h.provider("refuser", { mode: "decline" });
  await h.provider("sleeper", { mode: "no_answer" });
  await h.provider("receipts", { mode: "accept", receipt_required: true });
  // Records the operation at once and answers 700 ms later, so a settlement can be
  // called back while our create is still routing.
  await h.provider("slowpoke", { mode: "accept", delay_ms: 700 });
});
afterAll(() => h?.stop());

const paymentRequest = (
  shop: { shopId: string; merchantId: string },
  over: Record<string, unknown> = {},
) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: `mop-${randomUUID()}`,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  ...over,
});

describe("create", () => {
  it("routes a payment to the first accepting provider and answers pending with requisites", async () => {
    const shop = await h.shop(["refuser", "sleeper", "acme"]);
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    expect(operation?.status).toBe("pending");
    expect(operation?.number).toMatch(/^\d{16}$/);
    expect(operation?.actualAmount).toBe("0.00");
    expect(operation?.expiresAt).toBeDefined();
    expect(operation?.externalConfirmation).toBeUndefined();
    expect(operation?.recordedAmount).toBeUndefined();
  });

  it("answers awaiting_confirmation with a receipt requirement when the provider asks for one", async () => {
    const shop = await h.shop(["receipts"]);
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    expect(operation?.status).toBe("awaiting_confirmation");
    expect(operation?.externalConfirmation).toMatchObject({ required: true, methods: ["receipt"] });
  });

  it("rejects the call when no provider accepts, and a retry gets the same rejection", async () => {
    const shop = await h.shop(["refuser", "sleeper"]);
    const req = paymentRequest(shop);
    const first = await failureOf(h.operations.createOperation(req));
    expect(first.code).toBe(Code.Unavailable);
    expect(first.info?.code).toBe("no_provider_accepted");
    const again = await failureOf(h.operations.createOperation(req));
    expect(again.info?.code).toBe("no_provider_accepted");
  });

  it("returns the original operation for the same key and body, and 412 for another body", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    const first = await h.operations.createOperation(req);
    const second = await h.operations.createOperation(req);
    expect(second.operation).toEqual(first.operation);
    expect(second.replayed).toBe(true);
    const other = await failureOf(h.operations.createOperation({ ...req, amount: "1000.01" }));
    expect(other.code).toBe(Code.FailedPrecondition);
    expect(other.info).toMatchObject({ code: "idempotency_conflict", field: "merchant_operation_id" });
  });

  it("ignores number and bankname on a payment: the provider's requisites answer, and another number is the same request", async () => {
    const shop = await h.shop(["acme"]);
    const sent = "4000000000000002";
    const req = paymentRequest(shop, { number: sent, bankname: "no-such-bank" });
    const first = await h.operations.createOperation(req);
    expect(first.operation?.status).toBe("pending");
    expect(first.operation?.number).toMatch(/^\d{16}$/);
    expect(first.operation?.number).not.toBe(sent);
    expect(first.operation?.bankname).toBeUndefined();
    // Not part of the request's identity either: no 412 for another destination.
    const other = await h.operations.createOperation({ ...req, number: "5555555555554444", bankname: "" });
    expect(other.replayed).toBe(true);
    expect(other.operation).toEqual(first.operation);
  });

  it("yields one operation and fifty identical answers for fifty concurrent identical creates", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    const answers = await Promise.all(Array.from({ length: 50 }, () => h.operations.createOperation(req)));
    const ids = new Set(answers.map((a) => a.operation?.operationId));
    expect(ids.size).toBe(1);
    for (const a of answers) expect(a.operation).toEqual(answers[0]?.operation);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
  });

  it("yields one operation and 412 for the rest when fifty creates share a key with different bodies", async () => {
    const shop = await h.shop(["acme"]);
    const mop = `mop-${randomUUID()}`;
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        h.operations.createOperation(
          paymentRequest(shop, { merchantOperationId: mop, amount: `${100 + i}.00` }),
        ),
      ),
    );
    const ok = results.filter((r) => r.status === "fulfilled");
    expect(ok).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect(errorInfo(r.reason)?.code).toBe("idempotency_conflict");
    }
  });

  it("refuses a method without a route with route_not_configured and writes nothing", async () => {
    const shop = { shopId: randomUUID(), merchantId: randomUUID() };
    const req = paymentRequest(shop);
    const f = await failureOf(h.operations.createOperation(req));
    expect(f.code).toBe(Code.FailedPrecondition);
    expect(f.info?.code).toBe("route_not_configured");
    const read = await failureOf(
      h.operations.getOperation({
        scope: shop,
        id: { case: "merchantOperationId", value: req.merchantOperationId },
      }),
    );
    expect(read.code).toBe(Code.NotFound);
  });
});

describe("provider registration", () => {
  it("refuses a provider of the pool's kind under another name, and stores nothing", async () => {
    const name = `alias-${randomUUID().slice(0, 8)}`;
    const refused = await failureOf(
      h.operations.putProvider({
        name,
        kind: "self_matching",
        baseUrl: "http://127.0.0.1:1",
        credentials: "secret",
        methods: ["WT_RUB_C2C"],
      }),
    );
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.info?.field).toBe("kind");
    expect(await h.store.provider(name)).toBeUndefined();
  });
});

describe("settlement by provider callback", () => {
  it("applies a callback that arrives while the create is still routing, once routing is recorded", async () => {
    const shop = await h.shop(["slowpoke"]);
    const req = paymentRequest(shop);
    const id = operationIdFor(shop.shopId, req.merchantOperationId);
    const created = h.operations.createOperation(req);
    // The sandbox knows the operation before it answers our create.
    await eventually(
      () => fetch(`${h.sandboxUrl}/control/operations/${id}`),
      (res) => expect(res.status).toBe(200),
      5_000,
    );
    const settled = await h.settle(id, { legs: ["1000.00"] });
    expect(settled.ok).toBe(true);
    expect((await created).operation?.status).toBe("pending");
    const done = await eventually(
      () => h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } }),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("1000.00");
  });

  it("completes a payment settled in two legs with one receipt item per leg, in completion order", async () => {
    const shop = await h.shop(["acme"], { percent: "2.5", fixed: "0" });
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    const id = operation?.operationId ?? "";
    expect(operation?.settlementAmount).toBe("975.00");
    expect(operation?.commissionAmount).toBe("25.00");
    const before = await h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } });
    expect(before.receiptEvidenceStatus).toBe("not_ready");
    expect(before.receipts).toEqual([]);

    const res = await h.settle(id, { legs: ["600.00", "300.00"] });
    expect(res.ok).toBe(true);
    const done = await eventually(
      () => h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } }),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("900.00");
    expect(done.operation?.recordedAmount).toBe("900.00");
    expect(done.operation?.settlementAmount).toBe("877.50");
    expect(done.operation?.commissionAmount).toBe("22.50");
    expect(done.receipts.map((r) => r.amount).sort()).toEqual(["300.00", "600.00"]);
    const keys = done.receipts.map((r) => `${r.completedAt}|${r.id}`);
    expect(keys).toEqual([...keys].sort());
    expect(done.receiptEvidenceStatus).toBe("complete");

    const balances = await eventually(
      () => h.ledger.getBalances({ shopId: shop.shopId }),
      (b) => expect(b.balances.find((x) => x.currency === "RUB")?.balance).toBe("877.50"),
    );
    expect(balances.balances.map((b) => b.currency).sort()).toEqual(["RUB", "USDT"]);
  });

  it("completes a payment whose provider reported no legs with one synthetic contribution and evidence partial", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    const { operation } = await h.operations.createOperation(req);
    const id = operation?.operationId ?? "";
    const res = await h.settle(id, { legs: [] });
    expect(res.ok).toBe(true);
    // The callback itself was taken (the reconciler of this harness looks only after 30 min).
    expect(((await res.json()) as { delivery: { delivered: boolean } }).delivery.delivered).toBe(true);
    const byId = await eventually(
      () => h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } }),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(byId.operation?.actualAmount).toBe("1000.00");
    expect(byId.receiptEvidenceStatus).toBe("partial");
    expect(byId.receipts).toHaveLength(1);
    expect(byId.receipts[0]).toMatchObject({ id, amount: "1000.00" });
    expect(byId.receipts[0]?.receiptUrl).toBeUndefined();
    // Retrying does not change it, by either identifier.
    const again = await h.operations.getOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: req.merchantOperationId },
    });
    expect(again.receiptEvidenceStatus).toBe("partial");
    expect(again.receipts).toEqual(byId.receipts);
  });

  it("refuses a forged callback and changes nothing", async () => {
    const shop = await h.shop(["acme"]);
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    const body = JSON.stringify({
      callback_id: randomUUID(),
      reference: operation?.operationId,
      status: "completed",
      legs: [{ id: "x", amount: "1000.00", completed_at: new Date().toISOString() }],
    });
    const f = await failureOf(
      h.operations.handleProviderCallback({
        provider: "acme",
        body: new TextEncoder().encode(body),
        headers: { "x-sandbox-signature": `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}` },
      }),
    );
    expect(f.code).toBe(Code.Unauthenticated);
    const read = await h.operations.getOperation({
      scope: shop,
      id: { case: "operationId", value: operation?.operationId ?? "" },
    });
    expect(read.operation?.status).toBe("pending");
  });
});

describe("cancel", () => {
  it("cancels a pending payment once and repeats the same decision", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    await h.operations.createOperation(req);
    const id = { case: "merchantOperationId" as const, value: req.merchantOperationId };
    const first = await h.operations.cancelOperation({ scope: shop, id, reason: "" });
    expect(first.outcome).toBe("cancelled");
    expect(first.operation?.status).toBe("cancelled");
    const again = await h.operations.cancelOperation({ scope: shop, id, reason: "" });
    expect(again.outcome).toBe("cancelled");
    expect(again.operation?.version).toBe(first.operation?.version);
  });

  it("answers already_terminal for a completed payment and changes nothing", async () => {
    const shop = await h.shop(["acme"]);
    const { operation } = await h.operations.createOperation(paymentRequest(shop));
    const id = operation?.operationId ?? "";
    await h.settle(id, { legs: ["1000.00"] });
    await eventually(
      () => h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } }),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    const res = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "operationId", value: id },
      reason: "",
    });
    expect(res.outcome).toBe("already_terminal");
    expect(res.operation?.status).toBe("completed");
  });

  it("3: a cancel that timed out gave no decision; retrying the same command gets one, applied once", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    const { operation } = await h.operations.createOperation(req);
    const operationId = operation?.operationId ?? "";
    const id = { case: "merchantOperationId" as const, value: req.merchantOperationId };
    // Another transaction holds the payment's row, so the cancel cannot commit before its deadline.
    let release = () => {};
    const released = new Promise<void>((r) => {
      release = r;
    });
    let held = () => {};
    const isHeld = new Promise<void>((r) => {
      held = r;
    });
    const holder = h.sql.begin(async (tx) => {
      await tx`select id from operations.operations where id = ${operationId} for update`;
      held();
      await released;
    });
    await isHeld;
    const timedOut = await failureOf(
      h.operations.cancelOperation({ scope: shop, id, reason: "first try" }, { timeoutMs: 300 }),
    );
    expect(timedOut.code).toBe(Code.DeadlineExceeded);
    // The timeout is no decision: the payment still reads pending.
    expect((await h.operations.getOperation({ scope: shop, id })).operation?.status).toBe("pending");
    release();
    await holder;

    const retry = await h.operations.cancelOperation({ scope: shop, id, reason: "retry" });
    expect(retry.outcome).toBe("cancelled");
    expect(retry.operation?.status).toBe("cancelled");
    const again = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "operationId", value: operationId },
      reason: "retry",
    });
    expect(again.outcome).toBe("cancelled");
    expect(again.operation?.version).toBe(retry.operation?.version);
    // Whether the timed-out attempt committed after all or the retry did, it happened once.
    const events = await h.sql<{ n: number }[]>`
      select count(*)::int as n from operations.outbox
      where subject like '%.operations.payment.cancelled'
        and position(convert_to(${operationId}, 'UTF8') in payload) > 0`;
    expect(events[0]?.n).toBe(1);
  });

  it("refuses to cancel a payout with 412", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop, { type: "payout", number: "4111111111111111" });
    await h.operations.createOperation(req);
    const f = await failureOf(
      h.operations.cancelOperation({
        scope: shop,
        id: { case: "merchantOperationId", value: req.merchantOperationId },
        reason: "",
      }),
    );
    expect(f.code).toBe(Code.FailedPrecondition);
    expect(f.info?.code).toBe("not_cancellable");
  });

  it("answers 404 to a cancel by operation_id of a payment that does not exist", async () => {
    const shop = await h.shop(["acme"]);
    const f = await failureOf(
      h.operations.cancelOperation({
        scope: shop,
        id: { case: "operationId", value: randomUUID() },
        reason: "",
      }),
    );
    expect(f.code).toBe(Code.NotFound);
  });

  it("makes a create that arrives after its cancel complete as a cancelled payment without requisites", async () => {
    const shop = await h.shop(["acme"]);
    const req = paymentRequest(shop);
    const id = { case: "merchantOperationId" as const, value: req.merchantOperationId };
    const cancel = await h.operations.cancelOperation({ scope: shop, id, reason: "changed mind" });
    expect(cancel.outcome).toBe("cancelled");
    await expect(h.operations.getOperation({ scope: shop, id })).rejects.toThrow();
    const { operation } = await h.operations.createOperation(req);
    expect(operation?.status).toBe("cancelled");
    expect(operation?.number).toBeUndefined();
    expect(operation?.operationId).toBe(cancel.operation?.operationId);
  });

  it("never leaks requisites of a payment whose cancel won the race against create (40 runs)", async () => {
    const shop = await h.shop(["acme"]);
    let cancelWon = 0;
    for (let run = 0; run < 40; run++) {
      const req = paymentRequest(shop);
      const id = { case: "merchantOperationId" as const, value: req.merchantOperationId };
      // Stagger the cancel a little differently each run to hit every interleaving.
      const [created, cancelled] = await Promise.allSettled([
        h.operations.createOperation(req),
        new Promise((r) => setTimeout(r, run % 8)).then(() =>
          h.operations.cancelOperation({ scope: shop, id, reason: "" }),
        ),
      ]);
      expect(cancelled.status).toBe("fulfilled");
      if (cancelled.status === "fulfilled") expect(cancelled.value.outcome).toBe("cancelled");
      expect(created.status).toBe("fulfilled");
      if (created.status !== "fulfilled") continue;
      const read = await h.operations.getOperation({ scope: shop, id });
      expect(read.operation?.status).toBe("cancelled");
      if (created.value.operation?.status === "cancelled") {
        cancelWon++;
        expect(created.value.operation?.number).toBeUndefined();
        expect(read.operation?.number).toBeUndefined();
      }
    }
    // The point of the race test: the cancel must actually win some of the runs.
    expect(cancelWon).toBeGreaterThan(0);
  });
});
