import { Decimal } from "@gw/money";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceRow,
  errorOf,
  type HttpAnswer,
  newMop,
  Operator,
  type TestShop,
  webhooksOf,
} from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Payouts over HTTP: the destination rules of both rails, and the shop balance as a
// merchant reads it while a payout reserves its total, completes or is rejected. The
// demo pricing charges payouts 1% + 10.00, so a payout of 1000.00 costs 1020.00.

const CARD = "2200123456789010";
const PHONE = "+79001234567";

const cardPayout = (overrides: Record<string, unknown> = {}) => ({
  merchant_operation_id: newMop("payout"),
  client_id: "customer-9",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  number: CARD,
  ...overrides,
});

const phonePayout = (overrides: Record<string, unknown> = {}) =>
  cardPayout({ method: "WT_RUB_PHONE", number: PHONE, bankname: "tinkoff", ...overrides });

describe("payouts over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  /** For the rules of the rails: its balance is never looked at. */
  let rails: TestShop;
  /** For the balance walk-through: nothing else happens on it. */
  let money: TestShop;

  beforeAll(async () => {
    stack = await startTestStack();
    operator = new Operator(stack);
    const provider = await operator.provider("payouts");
    const via = { payin: [provider], payout: [provider], settlement_currency: "RUB" };
    rails = await operator.newShop({ name: "rails", routes: { WT_RUB_C2C: via, WT_RUB_PHONE: via } });
    money = await operator.newShop({ name: "money", routes: { WT_RUB_C2C: via, WT_RUB_PHONE: via } });
  });

  afterAll(async () => {
    await rails?.receiver.stop();
    await money?.receiver.stop();
    await stack?.stop();
  });

  describe("card and phone rails", () => {
    it("creates a card payout with the number as sent and аноним for a missing name, ignoring bankname", async () => {
      const res = await rails.api.payout(cardPayout({ bankname: "tinkoff" }));
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        type: "payout",
        status: "pending",
        method: "WT_RUB_C2C",
        expected_amount: "1000.00",
        currency: "RUB",
        number: CARD,
        name: "аноним",
        settlement_amount: "1020.00",
        settlement_currency: "RUB",
        commission_amount: "20.00",
      });
      expect(res.json).not.toHaveProperty("bankname");
      expect(res.json).not.toHaveProperty("bankname_details");
      expect(res.json).not.toHaveProperty("actual_amount");
      expect(res.json).not.toHaveProperty("recorded_amount");
      expect(res.json).not.toHaveProperty("payment_url");
    });

    it("uses аноним for an empty name and keeps a given one", async () => {
      const empty = await rails.api.payout(cardPayout({ name: "" }));
      expect(empty.json).toMatchObject({ status: "pending", name: "аноним" });
      const named = await rails.api.payout(cardPayout({ name: "Иван Петров" }));
      expect(named.json).toMatchObject({ status: "pending", name: "Иван Петров" });
    });

    it("creates a phone payout keeping the bank code and adding the bank's name", async () => {
      const res = await rails.api.payout(phonePayout());
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        type: "payout",
        status: "pending",
        method: "WT_RUB_PHONE",
        number: PHONE,
        name: "аноним",
        bankname: "tinkoff",
        bankname_details: "Т-Банк",
      });
    });

    const refused: [string, Record<string, unknown>, string][] = [
      ["a card payout without number", cardPayout({ number: undefined }), "number"],
      ["a card payout with an empty number", cardPayout({ number: "" }), "number"],
      ["a card payout with a number too short for a card", cardPayout({ number: "12345" }), "number"],
      ["a card payout with letters in the number", cardPayout({ number: "2200abcd56789010" }), "number"],
      ["a phone payout with a number that is no phone", phonePayout({ number: "call-me" }), "number"],
      ["a phone payout without bankname", phonePayout({ bankname: undefined }), "bankname"],
      ["a phone payout with an empty bankname", phonePayout({ bankname: "" }), "bankname"],
      ["a phone payout with a bank not in the dictionary", phonePayout({ bankname: "chase" }), "bankname"],
      [
        "a phone payout with the bank's name instead of its code",
        phonePayout({ bankname: "Т-Банк" }),
        "bankname",
      ],
      ["a payout with the payment validation error of amount", cardPayout({ amount: "10" }), "amount"],
    ];

    it.each(refused)("answers 400 naming the field and creates nothing for %s", async (_, body, field) => {
      const res = await rails.api.payout(body);
      expect(errorOf(res)).toEqual({ status: 400, code: "validation_failed", field });
      const read = await rails.api.state({ merchant_operation_id: body.merchant_operation_id });
      expect(read.status).toBe(404);
    });
  });

  describe("balances", () => {
    const rub = async () => balanceRow(await money.api.balances(), "RUB");
    /** Polls the RUB row until `done` holds; returns it. */
    const rubUntil = (what: string, done: (row: Awaited<ReturnType<typeof rub>>) => boolean) =>
      pollUntil(what, rub, done);
    const eq = (a: string, b: string) => new Decimal(a).eq(b);
    /** Compares amounts by value ("3980.00" is "3980"), and checks the spec's formula. */
    const expectRow = (
      row: Awaited<ReturnType<typeof rub>>,
      balance: string,
      reserved: string,
      minus: string,
    ) => {
      const norm = (x: string) => new Decimal(x).toString();
      expect({
        balance: norm(row.balance),
        reserved: norm(row.reserved),
        current_minus: norm(row.current_minus),
      }).toEqual({ balance: norm(balance), reserved: norm(reserved), current_minus: norm(minus) });
      const formula = Decimal.max(new Decimal(row.balance).plus(row.reserved).neg(), 0);
      expect(formula.eq(row.current_minus)).toBe(true);
    };
    let first: HttpAnswer;

    it("starts with one zero row per supported currency", async () => {
      const res = await money.api.balances();
      expect(res.status).toBe(200);
      const currencies = (res.json.balances as { currency: string }[]).map((r) => r.currency).sort();
      expect(currencies).toEqual(["RUB", "USDT"]);
      for (const currency of currencies) expectRow(balanceRow(res, currency), "0", "0", "0");
    });

    it("shows an operator's credit adjustment on the balance", async () => {
      await operator.adjust(money.shopId, "RUB", "5000.00");
      expectRow(await rubUntil("the credit of 5000.00", (r) => eq(r.balance, "5000")), "5000", "0", "0");
    });

    it("reserves a payout's amount plus commission at once: balance down and reserved up by 1020.00", async () => {
      first = await money.api.payout(cardPayout());
      expect(first.json).toMatchObject({ status: "pending", settlement_amount: "1020.00" });
      const row = await rubUntil("the reserve of the payout", (r) => !eq(r.reserved, "0"));
      expectRow(row, "3980", "1020", "0");
    });

    it("refuses to cancel a payout with 412 and leaves the reserve alone", async () => {
      const byId = await money.api.cancel({ operation_id: first.json.operation_id });
      expect(errorOf(byId)).toEqual({ status: 412, code: "not_cancellable", field: undefined });
      const byMop = await money.api.cancel({ merchant_operation_id: first.json.merchant_operation_id });
      expect(errorOf(byMop)).toEqual({ status: 412, code: "not_cancellable", field: undefined });
      const read = await money.api.state({ operation_id: first.json.operation_id });
      expect(read.json.status).toBe("pending");
      expectRow(await rub(), "3980", "1020", "0");
    });

    it("moves the reserve out when the payout completes, and sends the signed payout.completed webhook", async () => {
      const operationId = first.json.operation_id as string;
      await operator.settle(operationId, { legs: ["1000.00"] });
      const state = await pollUntil(
        "the payout to be completed",
        () => money.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "completed",
      );
      expect(state.json).toMatchObject({ settlement_amount: "1020.00", commission_amount: "20.00" });
      expectRow(await rubUntil("the reserve to be consumed", (r) => eq(r.reserved, "0")), "3980", "0", "0");

      const [hook] = await pollUntil(
        "the payout.completed webhook",
        async () => webhooksOf(money.receiver, operationId, "payout.completed"),
        (hooks) => hooks.length > 0,
      );
      const event = new Webhook(money.webhookSecret).verify(hook!.raw, hook!.headers) as {
        data: Record<string, unknown>;
      };
      expect(event.data).toMatchObject({ operation_id: operationId, type: "payout", status: "completed" });
    });

    it("counts debt beyond the reserves in current_minus = max(-(balance + reserved), 0)", async () => {
      await operator.adjust(money.shopId, "RUB", "-4000.00");
      expectRow(await rubUntil("the debit of 4000.00", (r) => eq(r.balance, "-20")), "-20", "0", "20");

      const second = await money.api.payout(cardPayout({ amount: "500.00" }));
      expect(second.json).toMatchObject({
        status: "pending",
        settlement_amount: "515.00",
        commission_amount: "15.00",
      });
      // 500.00 + 1% + 10.00 = 515.00: an overdrawn shop still reserves, and the debt stays 20.00.
      first = second;
    });

    it("returns the reserve to the balance when the payout is rejected", async () => {
      expectRow(await rubUntil("the second reserve", (r) => eq(r.reserved, "515")), "-535", "515", "20");
      const operationId = first.json.operation_id as string;
      await operator.settle(operationId, { status: "rejected" });
      const state = await pollUntil(
        "the payout to be rejected",
        () => money.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "rejected",
      );
      // Nothing was paid out, so nothing is charged.
      expect(state.json).toMatchObject({ settlement_amount: "0.00", commission_amount: "0.00" });
      expectRow(await rubUntil("the reserve to be released", (r) => eq(r.reserved, "0")), "-20", "0", "20");
      await pollUntil(
        "the payout.rejected webhook",
        async () => webhooksOf(money.receiver, operationId, "payout.rejected"),
        (hooks) => hooks.length === 1 && hooks[0]!.verified,
      );
    });
  });
});
