import { randomUUID } from "node:crypto";
import { Decimal } from "@gw/money";
import type { ReceivedWebhook } from "@gw/stack/webhook-receiver";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceRow, errorOf, Operator, paymentBody, type TestShop, webhooksOf } from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Auto-conversion (a RUB method settled in USDT at an operator's FX rate) and webhook
// delivery as a merchant's server lives it: signed terminal webhooks, an endpoint that is
// down and comes back, the operator's delivery log and a manual redelivery. The stack
// runs the short retry schedule of TEST_ENV (250 ms, 500 ms, 1 s, then 2 s).

/** 1 RUB = 0.0125 USDT (80 RUB per USDT). */
const RATE = "0.0125";
const FX_SOURCE = "e2e-fixed-rate";

describe("auto-conversion and webhooks over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  let fx: TestShop;
  let hooks: TestShop;
  /** While true the merchant's server answers every webhook with 503. */
  let down = true;
  /** The status the receiver answered to each attempt. */
  const answered = new Map<ReceivedWebhook, number>();

  beforeAll(async () => {
    stack = await startTestStack();
    operator = new Operator(stack);
    const provider = await operator.provider("fx");
    await operator.putFxRate("RUB", "USDT", RATE, FX_SOURCE);
    fx = await operator.newShop({
      name: "fx",
      routes: { WT_RUB_C2C: { payin: [provider], payout: [provider], settlement_currency: "USDT" } },
    });
    hooks = await operator.newShop({
      name: "hooks",
      routes: { WT_RUB_C2C: { payin: [provider], payout: [provider], settlement_currency: "RUB" } },
      receiverStatus: (hook) => {
        const status = down ? 503 : hook.verified ? 204 : 400;
        answered.set(hook, status);
        return status;
      },
    });
  });

  afterAll(async () => {
    await fx?.receiver.stop();
    await hooks?.receiver.stop();
    await stack?.stop();
  });

  describe("a RUB payment settled in USDT", () => {
    let operationId: string;

    it("quotes fx_rate and fx_source on the create response, with settlement figures in USDT and no recorded_*", async () => {
      const res = await fx.api.payment(paymentBody());
      expect(res.status).toBe(200);
      // 1000.00 × 0.0125 = 12.500000 USDT; commission 2.5% = 0.312500; credited 12.187500.
      expect(res.json).toMatchObject({
        status: "pending",
        currency: "RUB",
        expected_amount: "1000.00",
        actual_amount: "0.00",
        fx_rate: "0.012500",
        fx_source: FX_SOURCE,
        settlement_currency: "USDT",
        settlement_amount: "12.187500",
        commission_amount: "0.312500",
      });
      expect(res.json).not.toHaveProperty("recorded_amount");
      expect(res.json).not.toHaveProperty("recorded_currency");
      operationId = res.json.operation_id;
      const read = await fx.api.state({ operation_id: operationId });
      expect(read.json).toMatchObject({ status: "pending", fx_rate: "0.012500", fx_source: FX_SOURCE });
      expect(read.json).not.toHaveProperty("recorded_amount");
      expect(read.json).not.toHaveProperty("recorded_currency");
    });

    it("records actual × rate at USDT scale once the payment completes with another amount than asked", async () => {
      await operator.settle(operationId, { legs: ["999.99"] });
      const done = await pollUntil(
        "the FX payment to be completed",
        () => fx.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "completed",
      );
      // 999.99 × 0.0125 = 12.499875; commission round(0.312496875, 6) = 0.312497; credited 12.187378.
      expect(done.json).toMatchObject({
        actual_amount: "999.99",
        currency: "RUB",
        recorded_currency: "USDT",
        recorded_amount: "12.499875",
        settlement_currency: "USDT",
        settlement_amount: "12.187378",
        commission_amount: "0.312497",
        fx_rate: "0.012500",
      });
    });

    it("credits the USDT balance with the settlement amount and leaves RUB untouched", async () => {
      const res = await pollUntil(
        "the USDT balance to be credited",
        () => fx.api.balances(),
        (r) => r.status === 200 && !new Decimal(balanceRow(r, "USDT").balance).isZero(),
      );
      const usdt = balanceRow(res, "USDT");
      expect(new Decimal(usdt.balance).toFixed(6)).toBe("12.187378");
      expect(new Decimal(usdt.reserved).isZero()).toBe(true);
      expect(new Decimal(balanceRow(res, "RUB").balance).isZero()).toBe(true);
    });

    it("quotes a pending payout with fx_rate and fx_source but without recorded_*", async () => {
      const res = await fx.api.payout({ ...paymentBody({ amount: "100.00" }), number: "2200123456789010" });
      expect(res.status).toBe(200);
      // 100.00 × 0.0125 = 1.250000; commission 1% + 10 = 10.012500; charged 11.262500.
      expect(res.json).toMatchObject({
        type: "payout",
        status: "pending",
        fx_rate: "0.012500",
        fx_source: FX_SOURCE,
        settlement_currency: "USDT",
        settlement_amount: "11.262500",
        commission_amount: "10.012500",
      });
      expect(res.json).not.toHaveProperty("recorded_amount");
      expect(res.json).not.toHaveProperty("recorded_currency");
    });
  });

  describe("webhooks", () => {
    /** The three payments of the outage, by the terminal event each must produce. */
    const ops: Record<"completed" | "cancelled" | "rejected", string> = {
      completed: "",
      cancelled: "",
      rejected: "",
    };
    const attemptsOf = (operationId: string) => webhooksOf(hooks.receiver, operationId);
    const okOf = (list: ReceivedWebhook[]) => list.filter((h) => (answered.get(h) ?? 0) < 300);

    it("retries every event while the merchant's server answers 503", async () => {
      expect(down).toBe(true);
      const pay = async () => (await hooks.api.payment(paymentBody({ amount: "500.00" }))).json.operation_id;
      ops.completed = await pay();
      ops.cancelled = await pay();
      ops.rejected = await pay();
      await operator.settle(ops.completed, { legs: ["300.00", "200.00"] });
      expect((await hooks.api.cancel({ operation_id: ops.cancelled })).json.outcome).toBe("cancelled");
      await operator.settle(ops.rejected, { status: "rejected" });
      for (const operationId of Object.values(ops)) {
        await pollUntil(
          `two refused attempts for ${operationId}`,
          async () => attemptsOf(operationId),
          (list) => list.length >= 2,
        );
      }
      expect(Object.values(ops).flatMap((id) => okOf(attemptsOf(id)))).toEqual([]);
    });

    it("delivers every event exactly once after the server is back, with the same webhook-id and body on every attempt", async () => {
      down = false;
      for (const [status, operationId] of Object.entries(ops)) {
        await pollUntil(
          `the payment.${status} webhook to be accepted`,
          async () => okOf(attemptsOf(operationId)),
          (ok) => ok.length > 0,
        );
      }
      const log = await pollUntil(
        "the delivery log to say delivered",
        () => operator.deliveries(hooks.shopId),
        (rows) =>
          Object.values(ops).every((id) =>
            rows.some((r) => r.operation_id === id && r.status === "delivered"),
          ),
      );
      for (const [status, operationId] of Object.entries(ops)) {
        const attempts = attemptsOf(operationId);
        const ids = new Set(attempts.map((h) => h.id));
        expect(ids.size, `${status}: one event`).toBe(1);
        const [eventId] = ids;
        expect(eventId).toMatch(/^[0-9a-f-]{36}$/);
        expect(attempts.map((h) => (h.body as { type: string }).type)).toEqual(
          Array(attempts.length).fill(`payment.${status}`),
        );
        expect(new Set(attempts.map((h) => h.raw)).size, `${status}: one body`).toBe(1);
        expect(attempts.every((h) => h.verified)).toBe(true);
        expect(okOf(attempts), `${status}: accepted once`).toHaveLength(1);
        expect(attempts.length).toBeGreaterThanOrEqual(3);
        const row = log.find((r) => r.event_id === eventId);
        expect(row).toMatchObject({
          event_type: `payment.${status}`,
          operation_id: operationId,
          status: "delivered",
          attempts: attempts.length,
          last_status_code: 204,
        });
      }
    });

    it("signs terminal webhooks verifiably, carrying actual_amount and the event id", async () => {
      const expected = { completed: "500.00", cancelled: "0.00", rejected: "0.00" };
      for (const [status, operationId] of Object.entries(ops)) {
        const [hook] = okOf(attemptsOf(operationId));
        const event = new Webhook(hooks.webhookSecret).verify(hook!.raw, hook!.headers) as {
          id: string;
          type: string;
          created_at: string;
          data: Record<string, unknown>;
        };
        expect(event.id).toBe(hook!.headers["webhook-id"]);
        expect(event.type).toBe(`payment.${status}`);
        expect(event.data).toMatchObject({
          operation_id: operationId,
          status,
          actual_amount: expected[status as keyof typeof expected],
        });
        expect(() => new Webhook(fx.webhookSecret).verify(hook!.raw, hook!.headers)).toThrow();
      }
      const completed = okOf(attemptsOf(ops.completed))[0]!.body as {
        data: { receipts: { amount: number }[] };
      };
      expect(completed.data.receipts.map((r) => r.amount).sort((a, b) => a - b)).toEqual([200, 300]);
    });

    it("sends an event once more, same webhook-id and body, when the operator redelivers it", async () => {
      const before = attemptsOf(ops.completed);
      const eventId = before[0]!.id;
      const logBefore = (await operator.deliveries(hooks.shopId)).find((r) => r.event_id === eventId)!;
      const res = await operator.redeliver(hooks.shopId, eventId);
      expect(res.status).toBe(202);
      const after = await pollUntil(
        "the redelivered webhook",
        async () => attemptsOf(ops.completed),
        (list) => list.length > before.length,
      );
      const log = await pollUntil(
        "the redelivery to be logged as delivered",
        () => operator.deliveries(hooks.shopId),
        (rows) =>
          rows.some(
            (r) => r.event_id === eventId && r.attempts > logBefore.attempts && r.status === "delivered",
          ),
      );
      expect(after).toHaveLength(before.length + 1);
      const again = after.at(-1)!;
      expect(again.id).toBe(eventId);
      expect(again.raw).toBe(before[0]!.raw);
      expect(again.verified).toBe(true);
      expect(log.find((r) => r.event_id === eventId)!.attempts).toBe(logBefore.attempts + 1);
    });

    it("answers 404 to a redelivery of an event the shop never had", async () => {
      const res = await operator.redeliver(hooks.shopId, randomUUID());
      expect(errorOf(res)).toMatchObject({ status: 404 });
    });

    it("lists the delivery log with the largest limit the admin API documents (200) and refuses 201", async () => {
      const res = await operator.admin("GET", `/shops/${hooks.shopId}/webhooks/deliveries?limit=200`);
      expect(res.status, res.text).toBe(200);
      expect(res.json.deliveries.length).toBeGreaterThanOrEqual(3);
      const over = await operator.admin("GET", `/shops/${hooks.shopId}/webhooks/deliveries?limit=201`);
      expect(over.status).toBe(400);
      expect(over.json.error).toMatchObject({ code: "validation_failed", field: "limit" });
    });
  });
});
