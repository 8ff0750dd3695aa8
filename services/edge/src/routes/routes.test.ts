import { Code } from "@connectrpc/connect";
import type {
  CancelOperationRequest,
  CreateOperationRequest,
  GetOperationRequest,
  HandleProviderCallbackRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { failure } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  merchant,
  PAY_URL,
  testApp,
} from "../testing.ts";

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const aPayment = {
  merchant_operation_id: "order-1",
  client_id: "user-1",
  client_ip: "203.0.113.7",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  number: "4111111111111111",
  name: "Ivan",
  bankname: "sber",
};

/** An app whose operations fake records the create requests it receives. */
function recordingApp() {
  const creates: CreateOperationRequest[] = [];
  const app = testApp(database, {
    fakes: {
      operations: {
        createOperation: async (req) => {
          creates.push(req);
          return {
            operation: anOperation({
              type: req.type,
              merchantOperationId: req.merchantOperationId,
              method: req.method,
            }),
          };
        },
      },
    },
  });
  return { app, creates };
}

describe("create endpoints", () => {
  it("passes a payment's fields to CreateOperation and renders the operation", async () => {
    const { app, creates } = recordingApp();
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
    expect(res.status).toBe(200);
    expect(creates[0]).toMatchObject({
      type: "payment",
      merchantOperationId: "order-1",
      clientId: "user-1",
      clientIp: "203.0.113.7",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
      name: "Ivan",
    });
    // The destination is ignored on payments.
    expect(creates[0]?.number).toBeUndefined();
    expect(creates[0]?.bankname).toBeUndefined();
    expect(res.body).toMatchObject({
      operation_id: anOperation().operationId,
      type: "payment",
      actual_amount: "0.00",
    });
    expect(res.body).not.toHaveProperty("payment_url");
  });

  it("passes a payout's destination", async () => {
    const { app, creates } = recordingApp();
    const { apiKey } = await aShopWithKey(app);
    // A phone payout: a phone number (libs/api create.ts checks the rail's format) and a bank.
    const res = await merchant(app, apiKey, "POST", "/v1/payout", {
      ...aPayment,
      method: "WT_RUB_PHONE",
      number: "+79001234567",
    });
    expect(res.status).toBe(200);
    expect(creates[0]).toMatchObject({ type: "payout", number: "+79001234567", bankname: "sber" });
    expect(res.body.type).toBe("payout");
  });

  it("refuses a payout without number, and a phone payout without bankname, naming the field", async () => {
    const { app, creates } = recordingApp();
    const { apiKey } = await aShopWithKey(app);
    const noNumber = await merchant(app, apiKey, "POST", "/v1/payout", { ...aPayment, number: undefined });
    expect(noNumber.status).toBe(400);
    expect(noNumber.body.error).toMatchObject({ field: "number" });
    const noBank = await merchant(app, apiKey, "POST", "/v1/payout", {
      ...aPayment,
      method: "WT_RUB_PHONE",
      number: "+79001234567",
      bankname: undefined,
    });
    expect(noBank.status).toBe(400);
    expect(noBank.body.error).toMatchObject({ field: "bankname" });
    expect(creates).toHaveLength(0);
  });

  it("gives a link null payment_url while the hosted page is off, and the pay URL once it is on", async () => {
    const { app } = recordingApp();
    const { apiKey, shopId } = await aShopWithKey(app);
    const off = await merchant(app, apiKey, "POST", "/v1/payment/link", aPayment);
    expect(off.status).toBe(200);
    expect(off.body.payment_url).toBeNull();

    const put = await admin(app, "PUT", `/admin/v1/shops/${shopId}/settings`, { hosted_page_enabled: true });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ hosted_page_enabled: true, flexible_link_enabled: false });

    const on = await merchant(app, apiKey, "POST", "/v1/payment/link", aPayment);
    expect(on.body.payment_url).toBe(`${PAY_URL}/${anOperation().operationId}`);
    const plain = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
    expect(plain.body).not.toHaveProperty("payment_url");
  });
});

describe("get_operation_state", () => {
  function stateApp() {
    const reads: GetOperationRequest[] = [];
    const app = testApp(database, {
      fakes: {
        operations: {
          getOperation: async (req) => {
            reads.push(req);
            return {
              operation: anOperation({ status: "completed" }),
              receipts: [{ id: "r1", amount: "500.50", completedAt: "2026-11-21T10:01:00Z" }],
              receiptEvidenceStatus: "partial",
            };
          },
        },
      },
    });
    return { app, reads };
  }

  it("reads by operation_id and renders receipts and their evidence status", async () => {
    const { app, reads } = stateApp();
    const { apiKey, shopId } = await aShopWithKey(app);
    const id = anOperation().operationId;
    const res = await merchant(app, apiKey, "POST", "/v1/get_operation_state", {
      operation_id: id.toUpperCase(),
    });
    expect(res.status).toBe(200);
    expect(reads[0]?.id).toEqual({ case: "operationId", value: id });
    expect(reads[0]?.scope?.shopId).toBe(shopId);
    expect(res.body).toMatchObject({
      status: "completed",
      receipts: [{ id: "r1", amount: 500.5, completed_at: "2026-11-21T10:01:00Z", receipt_url: null }],
      receipt_evidence_status: "partial",
    });
  });

  it("reads by merchant_operation_id", async () => {
    const { app, reads } = stateApp();
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/get_operation_state", {
      merchant_operation_id: "order-1",
    });
    expect(res.status).toBe(200);
    expect(reads[0]?.id).toEqual({ case: "merchantOperationId", value: "order-1" });
  });

  it.each([
    ["neither identifier", {}],
    ["both identifiers", { operation_id: anOperation().operationId, merchant_operation_id: "order-1" }],
    ["an operation_id that is not a UUID", { operation_id: "123" }],
    ["an empty merchant_operation_id", { merchant_operation_id: "" }],
  ])("refuses %s with 400 without calling operations", async (_, body) => {
    const { app, reads } = stateApp();
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/get_operation_state", body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "validation_failed" });
    expect(reads).toHaveLength(0);
  });

  it("answers an operation outside the shop with 404 as operations reports it", async () => {
    const app = testApp(database, {
      fakes: {
        operations: {
          getOperation: async () => {
            throw failure(Code.NotFound, "operation_not_found", "operation not found");
          },
        },
      },
    });
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/get_operation_state", {
      merchant_operation_id: "x",
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({ code: "operation_not_found", message: "operation not found" });
  });
});

describe("cancel_operation", () => {
  function cancelApp() {
    const cancels: CancelOperationRequest[] = [];
    const app = testApp(database, {
      fakes: {
        operations: {
          cancelOperation: async (req) => {
            cancels.push(req);
            return { outcome: "cancelled", operation: anOperation({ status: "cancelled" }) };
          },
        },
      },
    });
    return { app, cancels };
  }

  it("answers {outcome, operation} and uses reason 'cancel' when none is given", async () => {
    const { app, cancels } = cancelApp();
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/cancel_operation", {
      merchant_operation_id: "order-1",
      reason: "",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: "cancelled", operation: { status: "cancelled" } });
    expect(cancels[0]?.reason).toBe("cancel");
  });

  it("accepts a reason of exactly 2048 bytes and refuses 2049, counting bytes not characters", async () => {
    const { app, cancels } = cancelApp();
    const { apiKey } = await aShopWithKey(app);
    const twoByteChars = "я".repeat(1024);
    const ok = await merchant(app, apiKey, "POST", "/v1/cancel_operation", {
      merchant_operation_id: "order-1",
      reason: twoByteChars,
    });
    expect(ok.status).toBe(200);
    expect(cancels[0]?.reason).toBe(twoByteChars);
    const tooLong = await merchant(app, apiKey, "POST", "/v1/cancel_operation", {
      merchant_operation_id: "order-1",
      reason: `${twoByteChars}x`,
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ field: "reason" });
  });

  it("refuses a non-UUID operation_id and an ambiguous request with 400", async () => {
    const { app, cancels } = cancelApp();
    const { apiKey } = await aShopWithKey(app);
    const notUuid = await merchant(app, apiKey, "POST", "/v1/cancel_operation", { operation_id: "abc" });
    expect(notUuid.status).toBe(400);
    expect(notUuid.body.error).toMatchObject({ field: "operation_id" });
    const both = await merchant(app, apiKey, "POST", "/v1/cancel_operation", {
      operation_id: anOperation().operationId,
      merchant_operation_id: "order-1",
    });
    expect(both.status).toBe(400);
    expect(cancels).toHaveLength(0);
  });

  it("maps a payout cancel refused by operations to 412", async () => {
    const app = testApp(database, {
      fakes: {
        operations: {
          cancelOperation: async () => {
            throw failure(Code.FailedPrecondition, "not_cancellable", "payouts cannot be cancelled");
          },
        },
      },
    });
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/cancel_operation", { merchant_operation_id: "p-1" });
    expect(res.status).toBe(412);
    expect(res.body.error).toMatchObject({ code: "not_cancellable" });
  });
});

describe("balances", () => {
  it("answers the key's shop's balances and maps an inconsistent ledger to 500", async () => {
    const shops: string[] = [];
    let inconsistent = false;
    const app = testApp(database, {
      fakes: {
        ledger: {
          getBalances: async (req) => {
            shops.push(req.shopId);
            if (inconsistent)
              throw failure(Code.Internal, "ledger_inconsistent", "balances are inconsistent");
            return {
              balances: [
                { currency: "RUB", balance: "-10.00", currentMinus: "10.00", reserved: "0.00" },
                { currency: "USDT", balance: "0.000000", currentMinus: "0.000000", reserved: "0.000000" },
              ],
            };
          },
        },
      },
    });
    const { apiKey, shopId } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "GET", "/v1/balances");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      balances: [
        { currency: "RUB", balance: "-10.00", current_minus: "10.00", reserved: "0.00" },
        { currency: "USDT", balance: "0.000000", current_minus: "0.000000", reserved: "0.000000" },
      ],
    });
    expect(shops).toEqual([shopId]);
    inconsistent = true;
    const broken = await merchant(app, apiKey, "GET", "/v1/balances");
    expect(broken.status).toBe(500);
    expect(broken.body.error).toMatchObject({ code: "ledger_inconsistent" });
  });
});

describe("provider callbacks", () => {
  it("passes the raw body and headers without an API key and answers {ok: true}", async () => {
    const seen: HandleProviderCallbackRequest[] = [];
    const app = testApp(database, {
      fakes: {
        operations: {
          handleProviderCallback: async (req) => {
            seen.push(req);
            if (req.headers["x-signature"] !== "good")
              throw failure(Code.Unauthenticated, "bad_signature", "bad signature");
            return {};
          },
        },
      },
    });
    const raw = '{"id": "p-1",  "status":"ok"}';
    const res = await app.request("/callbacks/providers/sandbox", {
      method: "POST",
      headers: { "content-type": "application/json", "x-signature": "good" },
      body: raw,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(seen[0]?.provider).toBe("sandbox");
    expect(new TextDecoder().decode(seen[0]?.body)).toBe(raw);

    const forged = await app.request("/callbacks/providers/sandbox", {
      method: "POST",
      headers: { "x-signature": "bad" },
      body: raw,
    });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ error: { code: "bad_signature" } });
  });
});

describe("admin pass-through", () => {
  it("forwards a webhook URL and returns the secret only when it is first set", async () => {
    let calls = 0;
    const app = testApp(database, {
      fakes: {
        webhooks: {
          putEndpoint: async () => (++calls === 1 ? { secret: "whsec_first" } : {}),
        },
      },
    });
    const { shopId } = await aShopWithKey(app);
    const first = await admin(app, "PUT", `/admin/v1/shops/${shopId}/settings`, {
      webhook_url: "https://m.test/hook",
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ webhook_url: "https://m.test/hook", webhook_secret: "whsec_first" });
    const second = await admin(app, "PUT", `/admin/v1/shops/${shopId}/settings`, {
      webhook_url: "https://m.test/h2",
    });
    expect(second.body).not.toHaveProperty("webhook_secret");
  });

  it("forwards pricing tiers and answers 404 for an unknown shop without calling the ledger", async () => {
    const seen: unknown[] = [];
    const app = testApp(database, {
      fakes: {
        ledger: {
          putPricing: async (req) => {
            seen.push({ shopId: req.shopId, method: req.method, payin: req.payin.map((t) => t.percent) });
            return {};
          },
        },
      },
    });
    const { shopId } = await aShopWithKey(app);
    const tier = { min_amount: "1.00", max_amount: "100000.00", percent: "2.5", fixed: "0" };
    const ok = await admin(app, "PUT", `/admin/v1/shops/${shopId}/pricing/WT_RUB_C2C`, { payin: [tier] });
    expect(ok.status).toBe(200);
    expect(seen).toEqual([{ shopId, method: "WT_RUB_C2C", payin: ["2.5"] }]);
    const unknown = await admin(
      app,
      "PUT",
      "/admin/v1/shops/0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e/pricing/WT_RUB_C2C",
      {
        payin: [tier],
      },
    );
    expect(unknown.status).toBe(404);
    const badMethod = await admin(app, "PUT", `/admin/v1/shops/${shopId}/pricing/NOPE`, { payin: [tier] });
    expect(badMethod.status).toBe(400);
    expect(badMethod.body.error).toMatchObject({ field: "method" });
    expect(seen).toHaveLength(1);
  });

  it("refuses an adjustment with more decimals than the currency has", async () => {
    const app = testApp(database, {
      fakes: { ledger: { postAdjustment: async () => ({ transferId: "t-1" }) } },
    });
    const { shopId } = await aShopWithKey(app);
    const bad = await admin(app, "POST", `/admin/v1/shops/${shopId}/ledger/adjustments`, {
      currency: "RUB",
      amount: "1.001",
      reason: "fix",
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ field: "amount" });
    const ok = await admin(app, "POST", `/admin/v1/shops/${shopId}/ledger/adjustments`, {
      currency: "RUB",
      amount: "-1.50",
      reason: "fix",
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ transfer_id: "t-1", adjustment_id: expect.any(String) });
  });
});
