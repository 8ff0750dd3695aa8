import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceRow,
  errorOf,
  type HttpAnswer,
  newMop,
  Operator,
  paymentBody,
  type TestShop,
  webhooksOf,
} from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// POST /v1/cancel_operation over HTTP: the spec's rules 1 to 7, the reason's byte limit,
// and the race of a cancel against the create it cancels, run many times.

const DESTINATION = ["number", "name", "bankname", "bankname_details"];

/** True when the body carries none of the destination fields. */
const withoutRequisites = (body: Record<string, unknown>) => DESTINATION.every((f) => !(f in body));

describe("cancelling payments over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  /** Payments accepted at once. */
  let shop: TestShop;
  /**
   * Only for the cancel-then-settle check, so its balance must stay zero. Its provider
   * cannot withdraw (others refuse a settle once the cancel reached them), so the payer
   * still pays: a provider fact for an operator (tests/e2e/provider-facts.test.ts).
   */
  let quiet: TestShop;
  /** Its provider answers after 1.5 s, so a cancel lands while the create is routing. */
  let slow: TestShop;
  /** Its provider answers after 40 ms: create and cancel overlap in every possible order. */
  let racy: TestShop;

  beforeAll(async () => {
    stack = await startTestStack();
    operator = new Operator(stack);
    const via = (p: string) => ({ payin: [p], payout: [p], settlement_currency: "RUB" });
    const instant = await operator.provider("instant");
    const slowProvider = await operator.provider("slow", { payin: { mode: "accept", delay_ms: 1500 } });
    const racyProvider = await operator.provider("racy", { payin: { mode: "accept", delay_ms: 40 } });
    shop = await operator.newShop({ name: "cancel", routes: { WT_RUB_C2C: via(instant) } });
    const keeps = await operator.provider("keeps", { payin: { mode: "accept", withdraw: "unsupported" } });
    quiet = await operator.newShop({ name: "quiet", routes: { WT_RUB_C2C: via(keeps) } });
    slow = await operator.newShop({ name: "slow", routes: { WT_RUB_C2C: via(slowProvider) } });
    racy = await operator.newShop({ name: "racy", routes: { WT_RUB_C2C: via(racyProvider) } });
  });

  afterAll(async () => {
    for (const s of [shop, quiet, slow, racy]) await s?.receiver.stop();
    await stack?.stop();
  });

  const pending = async (target: TestShop = shop) => {
    const res = await target.api.payment(paymentBody());
    expect(res.json?.status).toBe("pending");
    return res;
  };

  describe("requests", () => {
    it("answers 400 for neither identifier, for both, and for an operation_id that is not a UUID", async () => {
      const created = await pending();
      const neither = await shop.api.cancel({ reason: "x" });
      expect(errorOf(neither)).toMatchObject({ status: 400, code: "validation_failed" });
      const both = await shop.api.cancel({
        operation_id: created.json.operation_id,
        merchant_operation_id: created.json.merchant_operation_id,
      });
      expect(errorOf(both)).toMatchObject({ status: 400, code: "validation_failed" });
      const notUuid = await shop.api.cancel({ operation_id: "123" });
      expect(errorOf(notUuid)).toEqual({ status: 400, code: "validation_failed", field: "operation_id" });
      const read = await shop.api.state({ operation_id: created.json.operation_id });
      expect(read.json.status).toBe("pending");
    });

    it("refuses a reason over 2048 bytes (1025 two-byte characters) with 400 and changes nothing", async () => {
      const created = await pending();
      const reason = "я".repeat(1025);
      expect([reason.length, Buffer.byteLength(reason)]).toEqual([1025, 2050]);
      const res = await shop.api.cancel({ operation_id: created.json.operation_id, reason });
      expect(errorOf(res)).toEqual({ status: 400, code: "validation_failed", field: "reason" });
      const read = await shop.api.state({ operation_id: created.json.operation_id });
      expect(read.json.status).toBe("pending");
    });

    it("takes a reason of exactly 2048 bytes", async () => {
      const created = await pending();
      const res = await shop.api.cancel({
        operation_id: created.json.operation_id,
        reason: "я".repeat(1024),
      });
      expect(res.status).toBe(200);
      expect(res.json.outcome).toBe("cancelled");
    });

    it("takes an empty reason", async () => {
      const created = await pending();
      const res = await shop.api.cancel({
        merchant_operation_id: created.json.merchant_operation_id,
        reason: "",
      });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        outcome: "cancelled",
        operation: { operation_id: created.json.operation_id, type: "payment", status: "cancelled" },
      });
    });
  });

  describe("rules", () => {
    it("1: cancels a pending payment durably; money arriving later changes nothing", async () => {
      const created = await pending(quiet);
      const operationId = created.json.operation_id as string;
      const res = await quiet.api.cancel({ operation_id: operationId, reason: "customer left" });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        outcome: "cancelled",
        operation: { operation_id: operationId, type: "payment", status: "cancelled" },
      });
      const settled = await operator.settle(operationId, { legs: ["1000.00"] });
      expect(settled.delivery.delivered).toBe(true);
      const read = await quiet.api.state({ operation_id: operationId });
      expect(read.json).toMatchObject({ status: "cancelled", actual_amount: "0.00", receipts: [] });
      expect(balanceRow(await quiet.api.balances(), "RUB").balance).toMatch(/^0(\.0+)?$/);

      const [hook] = await pollUntil(
        "the payment.cancelled webhook",
        async () => webhooksOf(quiet.receiver, operationId, "payment.cancelled"),
        (hooks) => hooks.length > 0,
      );
      const event = new Webhook(quiet.webhookSecret).verify(hook!.raw, hook!.headers) as {
        data: Record<string, unknown>;
      };
      expect(event.data).toMatchObject({
        operation_id: operationId,
        status: "cancelled",
        actual_amount: "0.00",
      });
    });

    it("2: answers a repeated cancel with the same decision, by either identifier", async () => {
      const created = await pending();
      const first = await shop.api.cancel({ operation_id: created.json.operation_id });
      const again = await shop.api.cancel({ operation_id: created.json.operation_id });
      const byMop = await shop.api.cancel({ merchant_operation_id: created.json.merchant_operation_id });
      expect(first.json.outcome).toBe("cancelled");
      expect(again.json).toEqual(first.json);
      expect(byMop.json).toEqual(first.json);
    });

    it("4: answers 404 to a cancel by operation_id alone for a payment that does not exist", async () => {
      const res = await shop.api.cancel({ operation_id: randomUUID() });
      expect(errorOf(res)).toMatchObject({ status: 404 });
    });

    it("5 and 7: a cancel by merchant_operation_id before the create: reads 404, then the create completes as cancelled without requisites", async () => {
      const body = paymentBody();
      const mop = body.merchant_operation_id as string;
      const cancel = await shop.api.cancel({ merchant_operation_id: mop, reason: "changed my mind" });
      expect(cancel.status).toBe(200);
      expect(cancel.json).toMatchObject({
        outcome: "cancelled",
        operation: { type: "payment", status: "cancelled" },
      });
      expect(withoutRequisites(cancel.json.operation)).toBe(true);
      const operationId = cancel.json.operation.operation_id as string;

      expect((await shop.api.state({ merchant_operation_id: mop })).status).toBe(404);
      expect((await shop.api.state({ operation_id: operationId })).status).toBe(404);

      const created = await shop.api.payment(body);
      expect(created.status).toBe(200);
      expect(created.json).toMatchObject({
        operation_id: operationId,
        status: "cancelled",
        expected_amount: "1000.00",
      });
      expect(withoutRequisites(created.json)).toBe(true);
      const read = await shop.api.state({ merchant_operation_id: mop });
      expect(read.json).toMatchObject({ operation_id: operationId, status: "cancelled" });
      expect(withoutRequisites(read.json)).toBe(true);
      // It was never routed: no provider received it.
      await expect(operator.sandboxOperation(operationId)).rejects.toThrow(/404/);
      const repeat = await shop.api.cancel({ merchant_operation_id: mop });
      expect(repeat.json).toMatchObject({ outcome: "cancelled", operation: { status: "cancelled" } });

      const [hook] = await pollUntil(
        "the payment.cancelled webhook",
        async () => webhooksOf(shop.receiver, operationId, "payment.cancelled"),
        (hooks) => hooks.length > 0,
      );
      expect(withoutRequisites((hook!.body as { data: Record<string, unknown> }).data)).toBe(true);
    });

    it("5: a payout create on a key a cancel took first gets 412", async () => {
      const mop = newMop();
      const cancel = await shop.api.cancel({ merchant_operation_id: mop });
      expect(cancel.json.outcome).toBe("cancelled");
      const payout = await shop.api.payout({
        ...paymentBody({ merchant_operation_id: mop }),
        number: "2200123456789010",
      });
      expect(errorOf(payout)).toMatchObject({ status: 412 });
    });

    it("5: a cancel while the create is still routing wins: the create answers cancelled, and no read shows the requisites", async () => {
      const body = paymentBody();
      const creating = slow.api.payment(body);
      const cancel = await slow.api.cancel({ merchant_operation_id: body.merchant_operation_id });
      const created = await creating;
      expect(cancel.json.outcome).toBe("cancelled");
      expect(created.status).toBe(200);
      expect(created.json).toMatchObject({
        operation_id: cancel.json.operation.operation_id,
        status: "cancelled",
      });
      expect(withoutRequisites(created.json)).toBe(true);
      const read = await slow.api.state({ operation_id: created.json.operation_id });
      expect(read.json.status).toBe("cancelled");
      expect(withoutRequisites(read.json)).toBe(true);
    });

    it("6: answers already_terminal for a completed payment and changes nothing", async () => {
      const created = await pending();
      const operationId = created.json.operation_id as string;
      await operator.settle(operationId, { legs: ["1000.00"] });
      const completed = await pollUntil(
        "the payment to be completed",
        () => shop.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "completed",
      );
      for (const ref of [
        { operation_id: operationId },
        { merchant_operation_id: created.json.merchant_operation_id },
      ]) {
        const res = await shop.api.cancel(ref);
        expect(res.status).toBe(200);
        expect(res.json).toMatchObject({
          outcome: "already_terminal",
          operation: { operation_id: operationId, status: "completed", actual_amount: "1000.00" },
        });
      }
      const after = await shop.api.state({ operation_id: operationId });
      expect(after.json).toEqual(completed.json);
    });

    it("6: answers already_terminal for a rejected payment", async () => {
      const created = await pending();
      const operationId = created.json.operation_id as string;
      await operator.settle(operationId, { status: "rejected" });
      await pollUntil(
        "the payment to be rejected",
        () => shop.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "rejected",
      );
      const res = await shop.api.cancel({ operation_id: operationId });
      expect(res.json).toMatchObject({ outcome: "already_terminal", operation: { status: "rejected" } });
    });
  });

  it("never shows requisites of a payment whose create answered cancelled, over 30 races of create and cancel", async () => {
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const body = paymentBody({ amount: `${100 + i}.00` });
      const mop = body.merchant_operation_id as string;
      // Half the races on a provider that answers at once (the create may finish first),
      // half on one that takes 40 ms (the cancel lands while routing); both send orders.
      const target = i % 4 < 2 ? shop : racy;
      const cancelFirst = i % 2 === 1;
      let created: Promise<HttpAnswer>;
      let cancelled: Promise<HttpAnswer>;
      if (cancelFirst) {
        cancelled = target.api.cancel({ merchant_operation_id: mop });
        created = target.api.payment(body);
      } else {
        created = target.api.payment(body);
        cancelled = target.api.cancel({ merchant_operation_id: mop });
      }
      const [create, cancel] = await Promise.all([created, cancelled]);
      const context = `race ${i}: create ${create.status} ${create.text}; cancel ${cancel.status} ${cancel.text}`;
      expect(create.status, context).toBe(200);
      expect(cancel.status, context).toBe(200);
      expect(["pending", "cancelled"], context).toContain(create.json.status);
      expect(cancel.json.outcome, context).toBe("cancelled");
      expect(cancel.json.operation.operation_id, context).toBe(create.json.operation_id);
      const read = await target.api.state({ merchant_operation_id: mop });
      expect(read.json, context).toMatchObject({
        operation_id: create.json.operation_id,
        status: "cancelled",
      });
      if (create.json.status === "cancelled") {
        expect(withoutRequisites(create.json), context).toBe(true);
        expect(withoutRequisites(read.json), `${context}; read ${read.text}`).toBe(true);
      }
      const key = `${target === shop ? "instant" : "slow"} ${cancelFirst ? "cancel-first" : "create-first"} ${create.json.status}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
    }
    expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(30);
  }, 120_000);
});
