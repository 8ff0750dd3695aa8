import { randomBytes } from "node:crypto";
import { receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceRow, Operator, paymentBody, send, type TestShop } from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Money the providers moved that the gateway did not expect (issue 12, items 3 and 4):
// cancel and expiry withdraw the requisites at the provider, and whatever still completes
// is recorded as a provider fact, booked on suspense, listed for an operator and resolved
// once. Only the merchant API, the admin API and the sandbox's control API are used.

interface ProviderFact {
  id: string;
  operation_id: string | null;
  shop_id: string | null;
  provider: string;
  kind: string;
  provider_status: string;
  amount: string;
  currency: string;
  status: "open" | "resolved";
  resolution: null | { action: string; reason: string; resolved_at: string };
  created_at: string;
}

describe("provider facts and withdrawals", () => {
  let stack: TestStack;
  let operator: Operator;
  /** Its provider withdraws on request (the sandbox's default). */
  let withdrawing: TestShop;
  /** Its provider cannot withdraw: a payer who pays after the cancel still pays. */
  let stubborn: TestShop;
  /** Its first provider answers too late and cannot withdraw; the second takes the payment. */
  let cascade: TestShop;
  let lateProvider: string;
  /** Its provider's requisites expire after a second. */
  let expiring: TestShop;
  /** Its provider requires a receipt, handing out the requisites the generated receipts show. */
  let receipted: TestShop;

  beforeAll(async () => {
    stack = await startTestStack({
      extraEnv: {
        PROVIDER_ATTEMPT_TIMEOUT_MS: "1000",
        RECONCILE_INTERVAL_MS: "200",
        RECONCILE_BACKOFF_MS: "200",
        RECONCILE_BACKOFF_MAX_MS: "1000",
        WITHDRAW_INTERVAL_MS: "200",
        WITHDRAW_BACKOFF_MS: "200",
      },
    });
    operator = new Operator(stack);
    const via = (...p: string[]) => ({ payin: p, payout: p, settlement_currency: "RUB" });
    const instant = await operator.provider("instant");
    const keeps = await operator.provider("keeps", { payin: { mode: "accept", withdraw: "unsupported" } });
    lateProvider = await operator.provider("late", {
      payin: { mode: "accept", delay_ms: 2500, withdraw: "unsupported" },
    });
    const expires = await operator.provider("expires", { payin: { mode: "accept", expires_in_seconds: 1 } });
    withdrawing = await operator.newShop({ name: "withdrawing", routes: { WT_RUB_C2C: via(instant) } });
    stubborn = await operator.newShop({ name: "stubborn", routes: { WT_RUB_C2C: via(keeps) } });
    cascade = await operator.newShop({
      name: "cascade",
      routes: { WT_RUB_C2C: via(lateProvider, instant) },
    });
    expiring = await operator.newShop({ name: "expiring", routes: { WT_RUB_C2C: via(expires) } });
    const receipts = await operator.provider("rcpt", {
      payin: {
        mode: "accept",
        receipt_required: true,
        expires_in_seconds: 1800,
        requisites: { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" },
      },
    });
    receipted = await operator.newShop({ name: "receipted", routes: { WT_RUB_C2C: via(receipts) } });
  });

  afterAll(async () => {
    for (const s of [withdrawing, stubborn, cascade, expiring, receipted]) await s?.receiver.stop();
    await stack?.stop();
  });

  const via1 = (p: string) => ({ payin: [p], payout: [p], settlement_currency: "RUB" });
  const facts = async (): Promise<ProviderFact[]> => {
    const res = await operator.admin("GET", "/provider-facts");
    expect(res.status).toBe(200);
    return res.json.provider_facts as ProviderFact[];
  };
  const factsOf = async (operationId: string) =>
    (await facts()).filter((f) => f.operation_id === operationId);
  const sandboxStatus = async (operationId: string) =>
    (await operator.sandboxOperation(operationId)).map((v) => v.status as string);
  const settleAt = (operationId: string, body: Record<string, unknown>) =>
    send("POST", `${stack.urls.sandbox}/control/operations/${operationId}/settle`, { json: body });

  it("withdraws the requisites of a cancelled payment at its provider, which then refuses a settle", async () => {
    const created = await withdrawing.api.payment(paymentBody());
    expect(created.json.status).toBe("pending");
    const operationId = created.json.operation_id as string;
    expect((await withdrawing.api.cancel({ operation_id: operationId })).json.outcome).toBe("cancelled");

    await pollUntil(
      "the sandbox to show the payment withdrawn",
      () => sandboxStatus(operationId),
      (statuses) => statuses.includes("withdrawn"),
    );
    const settle = await settleAt(operationId, { legs: ["1000.00"] });
    expect(settle.status).toBe(409);
    expect(settle.json.error.code).toBe("withdrawn");
    expect((await withdrawing.api.state({ operation_id: operationId })).json.status).toBe("cancelled");
    expect(await factsOf(operationId)).toEqual([]);
  });

  it("records a completion after a cancel as a provider fact, books it on suspense and credits the shop once on resolve", async () => {
    const created = await stubborn.api.payment(paymentBody());
    const operationId = created.json.operation_id as string;
    expect((await stubborn.api.cancel({ operation_id: operationId })).json.outcome).toBe("cancelled");
    const settled = await operator.settle(operationId, { legs: ["1000.00"] });
    expect(settled.delivery.delivered).toBe(true);

    const [fact] = await pollUntil(
      "the late completion in the operator's list",
      () => factsOf(operationId),
      (list) => list.length > 0,
    );
    expect(fact).toMatchObject({
      operation_id: operationId,
      shop_id: stubborn.shopId,
      kind: "late_completion",
      provider_status: "completed",
      amount: "1000.00",
      currency: "RUB",
      status: "open",
      resolution: null,
    });
    // The operation stays terminal; the shop holds nothing until an operator decides.
    const read = await stubborn.api.state({ operation_id: operationId });
    expect(read.json).toMatchObject({ status: "cancelled", actual_amount: "0.00" });
    expect(balanceRow(await stubborn.api.balances(), "RUB").balance).toMatch(/^0(\.0+)?$/);

    // A replay of the same callback records nothing more.
    expect(await factsOf(operationId)).toHaveLength(1);

    const resolve = { action: "credit_shop", reason: "payer paid after the cancel", operator: "e2e" };
    const resolved = await operator.admin("POST", `/provider-facts/${fact!.id}/resolve`, resolve);
    expect(resolved.status).toBe(200);
    expect(resolved.json.provider_fact).toMatchObject({
      id: fact!.id,
      status: "resolved",
      resolution: { action: "credit_shop", reason: "payer paid after the cancel" },
    });
    const again = await operator.admin("POST", `/provider-facts/${fact!.id}/resolve`, resolve);
    expect(again.status).toBe(200);
    const other = await operator.admin("POST", `/provider-facts/${fact!.id}/resolve`, {
      ...resolve,
      action: "return_to_payer",
    });
    expect(other.status).toBe(412);

    // Credited once, commission as for a payment (2.5 %).
    await pollUntil(
      "the shop credited with the late payment",
      async () => balanceRow(await stubborn.api.balances(), "RUB").balance,
      (balance) => balance === "975.00",
    );
    expect((await stubborn.api.state({ operation_id: operationId })).json.status).toBe("cancelled");
    expect((await factsOf(operationId))[0]).toMatchObject({ status: "resolved" });
  });

  it("returns a late completion to the payer without touching the shop's balance", async () => {
    const created = await stubborn.api.payment(paymentBody({ amount: "300.00" }));
    const operationId = created.json.operation_id as string;
    await stubborn.api.cancel({ operation_id: operationId });
    const before = balanceRow(await stubborn.api.balances(), "RUB").balance;
    await operator.settle(operationId, { legs: ["300.00"] });
    const [fact] = await pollUntil(
      "the late completion in the operator's list",
      () => factsOf(operationId),
      (list) => list.length > 0,
    );
    const res = await operator.admin("POST", `/provider-facts/${fact!.id}/resolve`, {
      action: "return_to_payer",
      reason: "refund the payer",
      operator: "e2e",
    });
    expect(res.status).toBe(200);
    expect(res.json.provider_fact.resolution.action).toBe("return_to_payer");
    expect(balanceRow(await stubborn.api.balances(), "RUB").balance).toBe(before);
  });

  it("records a completion from a provider that does not hold the route as a provider fact", async () => {
    const created = await cascade.api.payment(paymentBody({ amount: "500.00" }));
    expect(created.json.status).toBe("pending");
    const operationId = created.json.operation_id as string;
    // The late provider took the payment but answered after the attempt timeout; the
    // second one holds the route. The payer pays to the late one's requisites.
    const settled = await operator.settle(operationId, { legs: ["500.00"], provider: lateProvider });
    expect(settled.delivery.delivered).toBe(true);
    const [fact] = await pollUntil(
      "the unrouted completion in the operator's list",
      () => factsOf(operationId),
      (list) => list.length > 0,
    );
    expect(fact).toMatchObject({
      provider: lateProvider,
      kind: "not_routed",
      provider_status: "completed",
      amount: "500.00",
      status: "open",
    });
    expect((await cascade.api.state({ operation_id: operationId })).json.status).toBe("pending");
  });

  it("books a payment completed by its receipt once when its provider then reports the completion with its own leg", async () => {
    const created = await receipted.api.payment(paymentBody({ amount: "1500.00" }));
    expect(created.json.status).toBe("awaiting_confirmation");
    const operationId = created.json.operation_id as string;
    const form = new FormData();
    form.append("operation_id", operationId);
    form.append("confirmation_type", "receipt");
    const pdf = await receiptPdf(receiptSpec("sberbank", "card"));
    form.append("receipt", new Blob([pdf], { type: "application/pdf" }), "receipt.pdf");
    const confirmed = await fetch(`${stack.urls.edge}/v1/confirm_payment`, {
      method: "POST",
      headers: { "x-api-key": receipted.apiKey },
      body: form,
      signal: AbortSignal.timeout(60_000),
    });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ status: "completed", actual_amount: "1500.00" });
    await pollUntil(
      "the shop credited with the payment",
      async () => balanceRow(await receipted.api.balances(), "RUB").balance,
      (balance) => balance === "1462.50",
    );

    // The provider reports the same money under its own leg id: nothing beyond it moved.
    const settled = await operator.settle(operationId, { legs: ["1500.00"] });
    expect(settled.delivery.delivered).toBe(true);
    expect(await factsOf(operationId)).toEqual([]);
    expect((await receipted.api.state({ operation_id: operationId })).json).toMatchObject({
      status: "completed",
      actual_amount: "1500.00",
    });
  });

  it("withdraws an expired payment at its provider before recording it rejected", async () => {
    const created = await expiring.api.payment(paymentBody());
    const operationId = created.json.operation_id as string;
    await pollUntil(
      "the expired payment rejected",
      async () => (await expiring.api.state({ operation_id: operationId })).json.status,
      (status) => status === "rejected",
    );
    expect(await sandboxStatus(operationId)).toEqual(["withdrawn"]);
    expect((await settleAt(operationId, { legs: ["1000.00"] })).status).toBe(409);
  });

  it("still withdraws a cancelled payment after the operations process was killed while its provider failed to", async () => {
    // Registered here rather than through the operator, to keep its credentials for the
    // change of behaviour while operations is down.
    const flaky = `flaky-${randomBytes(4).toString("hex")}`;
    const credentials = randomBytes(24).toString("base64url");
    const behave = (withdraw: string) =>
      send("PUT", `${stack.urls.sandbox}/control/providers/${flaky}`, {
        json: { credentials, payin: { mode: "accept", withdraw } },
      });
    expect((await behave("failing")).status).toBe(200);
    const registered = await operator.admin("PUT", `/providers/${flaky}`, {
      kind: "sandbox",
      base_url: stack.urls.sandbox,
      credentials,
      methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
    });
    expect(registered.status).toBeLessThan(300);
    const shop = await operator.newShop({ name: "flaky", routes: { WT_RUB_C2C: via1(flaky) } });
    try {
      const created = await shop.api.payment(paymentBody());
      const operationId = created.json.operation_id as string;
      expect((await shop.api.cancel({ operation_id: operationId })).json.outcome).toBe("cancelled");
      await stack.kill("operations", "SIGKILL");
      // The provider can withdraw again; nothing was withdrawn while it failed.
      expect((await behave("supported")).status).toBe(200);
      expect(await sandboxStatus(operationId)).toEqual(["pending"]);
      await stack.restart("operations");

      // A cancelled event the killed process had taken but not acknowledged comes back
      // after the consumer's ack wait (10 s), on top of the restart.
      await pollUntil(
        "the sandbox to show the payment withdrawn after the restart",
        () => sandboxStatus(operationId),
        (statuses) => statuses.includes("withdrawn"),
        60_000,
      );
      expect((await settleAt(operationId, { legs: ["1000.00"] })).status).toBe(409);
      expect((await shop.api.state({ operation_id: operationId })).json.status).toBe("cancelled");
    } finally {
      await shop.receiver.stop();
    }
  }, 120_000);
});
