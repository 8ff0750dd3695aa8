import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  errorOf,
  type HttpAnswer,
  MerchantApi,
  newMop,
  Operator,
  paymentBody,
  type TestShop,
  webhooksOf,
} from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Payments over HTTP, as a merchant sees them: validation, idempotency (also under
// concurrency), routing through several providers in order, receipts, hosted links and
// the state read. One stack for the file; each scenario has its own shop and routes.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** The third provider's card, so a test can tell whose requisites came back. */
const THIRD_CARD = "2200000000000012";

describe("payments over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  /** Routes every method through one provider that accepts; the hosted page is on. */
  let main: TestShop;
  /** Another merchant's shop on an accepting provider; the hosted page is off. */
  let other: TestShop;
  /** Declines, never answers, accepts, in that order. */
  let ordered: TestShop;
  let orderedProviders: { decliner: string; silent: string; third: string };
  /** Declines and never answers: nobody accepts. */
  let nobody: TestShop;
  /** Accepts and requires a receipt. */
  let receipt: TestShop;
  /** Accepts with a real expiry of the requisites. */
  let expiring: TestShop;
  const shops = () => [main, other, ordered, nobody, receipt, expiring];

  beforeAll(async () => {
    // A short attempt timeout keeps the provider that never answers from costing 5 s.
    // The idempotency races below send 50 creates of one key at once: above the edge's
    // per-key share of in-flight requests (16), which admission.test.ts covers.
    stack = await startTestStack({
      extraEnv: { PROVIDER_ATTEMPT_TIMEOUT_MS: "2000", MAX_IN_FLIGHT_PER_KEY: "64" },
    });
    operator = new Operator(stack);
    const accepting = await operator.provider("acc");
    const decliner = await operator.provider("dec", { payin: { mode: "decline" } });
    const silent = await operator.provider("mute", { payin: { mode: "no_answer" } });
    const third = await operator.provider("third", {
      payin: { mode: "accept", requisites: { card_number: THIRD_CARD } },
    });
    const receipts = await operator.provider("rcpt", { payin: { mode: "accept", receipt_required: true } });
    const expires = await operator.provider("exp", { payin: { mode: "accept", expires_in_seconds: 900 } });
    orderedProviders = { decliner, silent, third };

    const via = (...payin: string[]) => ({ payin, payout: payin, settlement_currency: "RUB" });
    main = await operator.newShop({
      name: "main",
      routes: { WT_RUB_C2C: via(accepting), WT_RUB_PHONE: via(accepting) },
      hostedPage: true,
    });
    other = await operator.newShop({ name: "other", routes: { WT_RUB_C2C: via(accepting) } });
    ordered = await operator.newShop({
      name: "ordered",
      routes: { WT_RUB_C2C: via(decliner, silent, third) },
    });
    nobody = await operator.newShop({ name: "nobody", routes: { WT_RUB_C2C: via(decliner, silent) } });
    receipt = await operator.newShop({ name: "receipt", routes: { WT_RUB_C2C: via(receipts) } });
    expiring = await operator.newShop({ name: "expiring", routes: { WT_RUB_C2C: via(expires) } });
  });

  afterAll(async () => {
    for (const shop of shops()) await shop?.receiver.stop();
    await stack?.stop();
  });

  /** A read by merchant_operation_id that must find nothing: the bad request changed nothing. */
  const expectNothingCreated = async (shop: TestShop, mop: string) => {
    const read = await shop.api.state({ merchant_operation_id: mop });
    expect(errorOf(read)).toMatchObject({ status: 404 });
  };

  describe("validation", () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["client_id is missing", { client_id: undefined }, "client_id"],
      ["method is missing", { method: undefined }, "method"],
      ["amount is missing", { amount: undefined }, "amount"],
      ["currency is missing", { currency: undefined }, "currency"],
      ['amount is "10" (no decimals)', { amount: "10" }, "amount"],
      ['amount is "10.001" (three decimals)', { amount: "10.001" }, "amount"],
      ['amount is "-1.00"', { amount: "-1.00" }, "amount"],
      ['amount is "0.00"', { amount: "0.00" }, "amount"],
      ["amount is a JSON number", { amount: 10 }, "amount"],
      ["client_id is a number", { client_id: 42 }, "client_id"],
      ["client_id is empty", { client_id: "" }, "client_id"],
      ["method is unknown", { method: "WT_EUR_SEPA" }, "method"],
      ["method is a number", { method: 7 }, "method"],
      ["method belongs to another currency", { currency: "USDT" }, "method"],
      ["currency is unknown", { currency: "EUR" }, "currency"],
      ["client_ip is not an address", { client_ip: "not-an-ip" }, "client_ip"],
    ];

    it.each(cases)(
      "answers 400 naming the field and creates nothing when %s",
      async (_, overrides, field) => {
        const body = paymentBody(overrides);
        const res = await main.api.payment(body);
        expect(errorOf(res)).toEqual({ status: 400, code: "validation_failed", field });
        expect(res.json.error.message).toEqual(expect.any(String));
        expect(res.json.request_id).toEqual(expect.any(String));
        await expectNothingCreated(main, body.merchant_operation_id as string);
      },
    );

    it("answers 400 naming merchant_operation_id when it is missing or empty", async () => {
      for (const mop of [undefined, ""]) {
        const res = await main.api.payment(paymentBody({ merchant_operation_id: mop }));
        expect(errorOf(res)).toEqual({
          status: 400,
          code: "validation_failed",
          field: "merchant_operation_id",
        });
      }
    });

    it("answers 400 invalid_json for malformed JSON and creates nothing", async () => {
      const mop = newMop();
      const res = await main.api.postRaw(
        "/payment",
        `{"merchant_operation_id": "${mop}", "client_id": "c", "amount": "1.00",`,
      );
      expect(errorOf(res)).toEqual({ status: 400, code: "invalid_json", field: undefined });
      await expectNothingCreated(main, mop);
    });

    it("answers 400 invalid_json for a JSON array instead of an object", async () => {
      const res = await main.api.postRaw("/payment", JSON.stringify([paymentBody()]));
      expect(errorOf(res)).toMatchObject({ status: 400, code: "invalid_json" });
    });

    it("answers 413 for a body over 64 KiB and creates nothing", async () => {
      const body = paymentBody({ client_id: "x".repeat(70 * 1024) });
      const res = await main.api.payment(body);
      expect(errorOf(res)).toMatchObject({ status: 413, code: "payload_too_large" });
      await expectNothingCreated(main, body.merchant_operation_id as string);
    });
  });

  describe("idempotency", () => {
    it("answers the same key and the same body twice with identical bodies", async () => {
      const body = paymentBody();
      const first = await main.api.payment(body);
      const second = await main.api.payment(body);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.json).toEqual(first.json);
      expect(first.json.status).toBe("pending");
    });

    it("answers the same key with another amount with 412 idempotency_conflict and keeps the original", async () => {
      const body = paymentBody();
      const first = await main.api.payment(body);
      const conflicting = await main.api.payment({ ...body, amount: "1000.01" });
      expect(errorOf(conflicting)).toEqual({
        status: 412,
        code: "idempotency_conflict",
        field: "merchant_operation_id",
      });
      const read = await main.api.state({ merchant_operation_id: body.merchant_operation_id });
      expect(read.json).toMatchObject({ operation_id: first.json.operation_id, expected_amount: "1000.00" });
    });

    it("gives 50 concurrent identical creates one operation and 50 identical bodies", async () => {
      const body = paymentBody({ amount: "777.00" });
      const answers = await Promise.all(Array.from({ length: 50 }, () => main.api.payment(body)));
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
      expect(new Set(answers.map((a) => a.json.operation_id)).size).toBe(1);
      for (const a of answers) expect(a.json).toEqual(answers[0]!.json);
      expect(answers[0]!.json).toMatchObject({ status: "pending", expected_amount: "777.00" });
    });

    it("gives 50 concurrent creates of one key with different amounts exactly one 200 and 49 × 412", async () => {
      const mop = newMop();
      const amounts = Array.from({ length: 50 }, (_, i) => `${100 + i}.00`);
      const answers = await Promise.all(
        amounts.map((amount) => main.api.payment(paymentBody({ merchant_operation_id: mop, amount }))),
      );
      const won = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 412);
      expect(won).toHaveLength(1);
      expect(refused).toHaveLength(49);
      for (const a of refused) expect(a.json.error.code).toBe("idempotency_conflict");
      const winner = won[0]!.json;
      expect(amounts).toContain(winner.expected_amount);
      const read = await main.api.state({ merchant_operation_id: mop });
      expect(read.json).toMatchObject({
        operation_id: winner.operation_id,
        expected_amount: winner.expected_amount,
      });
    });
  });

  describe("routing", () => {
    it("skips a provider that declines and one that never answers, and answers pending from the third", async () => {
      const res = await ordered.api.payment(paymentBody());
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: "pending", number: THIRD_CARD });
      const seen = await operator.sandboxOperation(res.json.operation_id);
      const decisions = Object.fromEntries(seen.map((v) => [v.provider, v.decision]));
      expect(decisions).toEqual({
        [orderedProviders.decliner]: "declined",
        [orderedProviders.silent]: "no_answer",
        [orderedProviders.third]: "accepted",
      });
    });

    it("answers 503 no_provider_accepted when nobody accepts, never a synthetic pending, also on a retry", async () => {
      const body = paymentBody();
      const res = await nobody.api.payment(body);
      expect(errorOf(res)).toEqual({ status: 503, code: "no_provider_accepted", field: undefined });
      expect(res.json).not.toHaveProperty("status");
      const retry = await nobody.api.payment(body);
      expect(errorOf(retry)).toEqual({ status: 503, code: "no_provider_accepted", field: undefined });
      // No operation was created (a retry may still route it): there is nothing to read.
      const read = await nobody.api.state({ merchant_operation_id: body.merchant_operation_id });
      expect(errorOf(read)).toMatchObject({ status: 404 });
      expect(read.json).not.toHaveProperty("number");
    });

    it("answers awaiting_confirmation with external_confirmation when the provider requires a receipt, and sends the webhook", async () => {
      const res = await receipt.api.payment(paymentBody());
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        status: "awaiting_confirmation",
        external_confirmation: { required: true, methods: ["receipt"] },
      });
      expect(res.json.number).toMatch(/^\d{12,19}$/);
      const operationId = res.json.operation_id as string;
      const [hook] = await pollUntil(
        "the payment.awaiting_confirmation webhook",
        async () => webhooksOf(receipt.receiver, operationId, "payment.awaiting_confirmation"),
        (hooks) => hooks.length > 0,
      );
      const event = new Webhook(receipt.webhookSecret).verify(hook!.raw, hook!.headers) as {
        type: string;
        data: Record<string, unknown>;
      };
      expect(event.type).toBe("payment.awaiting_confirmation");
      expect(event.data).toMatchObject({
        operation_id: operationId,
        status: "awaiting_confirmation",
        external_confirmation: { required: true, methods: ["receipt"] },
      });
    });

    it("ignores number and bankname sent on a payment: the provider's requisites answer, and another number is the same request", async () => {
      const sent = "4000000000000002";
      const body = paymentBody({ number: sent, bankname: "no-such-bank" });
      const res = await ordered.api.payment(body);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: "pending", number: THIRD_CARD });
      expect(res.json).not.toHaveProperty("bankname");
      const retry = await ordered.api.payment({ ...body, number: "5555555555554444", bankname: undefined });
      expect(retry.status).toBe(200);
      expect(retry.json).toEqual(res.json);
    });

    it("carries expires_at only when the provider reports an expiry", async () => {
      const withExpiry = await expiring.api.payment(paymentBody());
      expect(withExpiry.status).toBe(200);
      expect(withExpiry.json.expires_at).toMatch(RFC3339);
      expect(Date.parse(withExpiry.json.expires_at)).toBeGreaterThan(Date.parse(withExpiry.json.created_at));
      const read = await expiring.api.state({ operation_id: withExpiry.json.operation_id });
      expect(read.json.expires_at).toBe(withExpiry.json.expires_at);

      const without = await main.api.payment(paymentBody());
      expect(without.status).toBe(200);
      expect(without.json).not.toHaveProperty("expires_at");
    });

    it("gives a phone-rail payment a phone number, a bank code and the bank's name", async () => {
      const res = await main.api.payment(paymentBody({ method: "WT_RUB_PHONE" }));
      expect(res.status).toBe(200);
      expect(res.json.number).toMatch(/^\+?\d{10,15}$/);
      expect(res.json).toMatchObject({ bankname: "sberbank", bankname_details: "Сбербанк" });
    });
  });

  describe("hosted link", () => {
    it("answers /v1/payment/link with payment_url = {pay_url}/<operation_id> when the hosted page is on", async () => {
      const body = paymentBody();
      const res = await main.api.link(body);
      expect(res.status).toBe(200);
      expect(res.json.operation_id).toMatch(UUID);
      expect(res.json).toMatchObject({ type: "payment", status: "pending" });
      expect(res.json.payment_url).toBe(`${stack.urls.pay}/${res.json.operation_id}`);
      const again = await main.api.link(body);
      expect(again.json).toEqual(res.json);
    });

    it("answers payment_url null when the hosted page is off, and still creates the payment", async () => {
      const res = await other.api.link(paymentBody());
      expect(res.status).toBe(200);
      expect(res.json).toHaveProperty("payment_url", null);
      expect(res.json.number).toMatch(/^\d{12,19}$/);
      const read = await other.api.state({ operation_id: res.json.operation_id });
      expect(read.json.status).toBe("pending");
    });

    it("never puts payment_url on plain /v1/payment nor on the state read", async () => {
      const res = await main.api.payment(paymentBody());
      expect(res.status).toBe(200);
      expect(res.json).not.toHaveProperty("payment_url");
      const read = await main.api.state({ operation_id: res.json.operation_id });
      expect(read.json).not.toHaveProperty("payment_url");
    });
  });

  describe("get_operation_state", () => {
    let created: HttpAnswer;
    let mop: string;

    beforeAll(async () => {
      mop = newMop();
      created = await main.api.payment(paymentBody({ merchant_operation_id: mop }));
      expect(created.status).toBe(200);
    });

    it("answers 400 for both identifiers, for neither, and for an operation_id that is not a UUID", async () => {
      const both = await main.api.state({
        operation_id: created.json.operation_id,
        merchant_operation_id: mop,
      });
      expect(errorOf(both)).toMatchObject({ status: 400, code: "validation_failed" });
      const neither = await main.api.state({});
      expect(errorOf(neither)).toMatchObject({ status: 400, code: "validation_failed" });
      const notUuid = await main.api.state({ operation_id: "not-a-uuid" });
      expect(errorOf(notUuid)).toEqual({ status: 400, code: "validation_failed", field: "operation_id" });
    });

    it("carries no ETag header and no version field, by either identifier", async () => {
      for (const ref of [{ operation_id: created.json.operation_id }, { merchant_operation_id: mop }]) {
        const res = await main.api.state(ref);
        expect(res.status).toBe(200);
        expect(res.headers.get("etag")).toBeNull();
        expect(Object.keys(res.json).filter((k) => /version|etag/i.test(k))).toEqual([]);
      }
    });

    it("answers 404 for an operation id nobody issued", async () => {
      const res = await main.api.state({ operation_id: randomUUID() });
      expect(res.status).toBe(404);
    });

    it("answers 404 to another shop's key, by either id, and for its cancel", async () => {
      const byId = await other.api.state({ operation_id: created.json.operation_id });
      expect(byId.status).toBe(404);
      const byMop = await other.api.state({ merchant_operation_id: mop });
      expect(byMop.status).toBe(404);
      const cancel = await other.api.cancel({ operation_id: created.json.operation_id });
      expect(cancel.status).toBe(404);
      const own = await main.api.state({ operation_id: created.json.operation_id });
      expect(own.json.status).toBe("pending");
    });

    it("lists two settled legs as two receipts ordered by completed_at then id, none before completion", async () => {
      const operationId = created.json.operation_id as string;
      const before = await main.api.state({ operation_id: operationId });
      expect(before.json).toMatchObject({
        status: "pending",
        receipts: [],
        receipt_evidence_status: "not_ready",
      });

      await operator.settle(operationId, { legs: ["600.00", "400.00"] });
      const after = await pollUntil(
        "the payment to be completed",
        () => main.api.state({ operation_id: operationId }),
        (r) => r.json?.status === "completed",
      );
      expect(after.json).toMatchObject({ actual_amount: "1000.00", receipt_evidence_status: "complete" });
      const receipts = after.json.receipts as {
        id: string;
        amount: number;
        completed_at: string;
        receipt_url: string | null;
      }[];
      expect(receipts).toHaveLength(2);
      expect(receipts.map((r) => r.amount).sort((a, b) => a - b)).toEqual([400, 600]);
      for (const r of receipts) {
        expect(r.id).toMatch(UUID);
        expect(r.completed_at).toMatch(RFC3339);
        if (r.receipt_url !== null) expect(r.receipt_url).toMatch(/^https:\/\//);
      }
      const key = (r: (typeof receipts)[number]) => [Date.parse(r.completed_at), r.id] as const;
      const [a, b] = receipts.map(key);
      expect(a![0] < b![0] || (a![0] === b![0] && a![1] < b![1])).toBe(true);
      const byMop = await main.api.state({ merchant_operation_id: mop });
      expect(byMop.json.receipts).toEqual(receipts);
    });
  });

  describe("revoking a key", () => {
    it("leaves operations in flight unaffected: the create completes, the webhook arrives, another key of the shop reads the state", async () => {
      const slow = await operator.provider("slowrev", { payin: { mode: "accept", delay_ms: 1500 } });
      const shop = await operator.newShop({
        name: "revoking",
        routes: { WT_RUB_C2C: { payin: [slow], payout: [slow], settlement_currency: "RUB" } },
      });
      const sql = postgres(stack.databaseUrl, { max: 1 });
      try {
        const second = await operator.admin("POST", `/shops/${shop.shopId}/api-keys`, {});
        expect(second.status).toBe(201);
        const other = new MerchantApi(stack.urls.edge, second.json.api_key as string);
        const keys = await operator.admin("GET", `/shops/${shop.shopId}/api-keys`);
        const first = (keys.json.api_keys as { key_id: string; prefix: string }[]).find((k) =>
          shop.apiKey.startsWith(k.prefix),
        );
        expect(first).toBeDefined();

        // A payment already pending when the key is revoked, and a create still routing then.
        const earlier = await shop.api.payment(paymentBody());
        expect(earlier.json?.status).toBe("pending");
        const body = paymentBody();
        const inFlight = shop.api.payment(body);
        await pollUntil(
          "the create to be routing",
          () => sql<{ status: string }[]>`
            select status from operations.operations
            where shop_id = ${shop.shopId} and merchant_operation_id = ${body.merchant_operation_id as string}`,
          (rows) => rows[0]?.status === "routing",
          10_000,
        );
        const revoked = await operator.admin("POST", `/api-keys/${first?.key_id}/revoke`);
        expect(revoked.status).toBe(200);
        expect(errorOf(await shop.api.balances())).toMatchObject({ status: 401, code: "invalid_api_key" });

        const created = await inFlight;
        expect(created.status).toBe(200);
        expect(created.json).toMatchObject({
          status: "pending",
          merchant_operation_id: body.merchant_operation_id,
        });
        expect(created.json.number).toMatch(/^\d{12,19}$/);

        for (const op of [earlier.json, created.json]) {
          const operationId = op.operation_id as string;
          await operator.settle(operationId, { legs: ["1000.00"] });
          await pollUntil(
            "the payment.completed webhook",
            async () => webhooksOf(shop.receiver, operationId, "payment.completed"),
            (hooks) => hooks.length > 0,
          );
          const byId = await other.state({ operation_id: operationId });
          expect(byId.status).toBe(200);
          expect(byId.json).toMatchObject({ status: "completed", actual_amount: "1000.00" });
          const byMop = await other.state({ merchant_operation_id: op.merchant_operation_id });
          expect(byMop.json).toMatchObject({ operation_id: operationId, status: "completed" });
          // The revoked key reads nothing any more.
          expect(errorOf(await shop.api.state({ operation_id: operationId }))).toMatchObject({ status: 401 });
        }
      } finally {
        await sql.end();
        await shop.receiver.stop();
      }
    });
  });

  it("never shows a provider name or an internal id in any response or webhook", async () => {
    const internalValues = [...operator.providerNames, ...shops().flatMap((s) => [s.shopId, s.merchantId])];
    const internalKey = /^(provider\w*|shop_id|merchant_id|route\w*)$/;
    const texts = shops().flatMap((s) => [...s.api.transcript, ...s.receiver.received.map((h) => h.raw)]);
    expect(texts.length).toBeGreaterThan(50);
    expect(receipt.receiver.received.length).toBeGreaterThan(0);
    const keysOf = (value: unknown): string[] =>
      value !== null && typeof value === "object"
        ? Object.entries(value).flatMap(([k, v]) => [...(Array.isArray(value) ? [] : [k]), ...keysOf(v)])
        : [];
    for (const text of texts) {
      for (const word of internalValues) expect(text).not.toContain(word);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        continue;
      }
      expect(keysOf(parsed).filter((k) => internalKey.test(k))).toEqual([]);
    }
    for (const hook of shops().flatMap((s) => s.receiver.received))
      for (const word of internalValues) expect(JSON.stringify(hook.headers)).not.toContain(word);
  });
});
