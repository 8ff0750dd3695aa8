import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  merchant,
  testApp,
} from "../testing.ts";

// Issue 27 item 3 through the edge: each identifier and text field at its limit passes on
// to operations, one past it (or with a NUL or control character) is 400
// validation_failed naming the field, on create, get_operation_state and cancel_operation.

let database: EdgeTestDatabase;
let app: ReturnType<typeof testApp>;
let apiKey = "";
beforeAll(async () => {
  database = await edgeTestDatabase();
  app = testApp(database, {
    fakes: {
      operations: {
        createOperation: async () => ({ operation: anOperation() }),
        getOperation: async () => ({ operation: anOperation(), receipts: [], receiptEvidenceStatus: "none" }),
        cancelOperation: async () => ({
          outcome: "cancelled",
          operation: anOperation({ status: "cancelled" }),
        }),
      },
    },
  });
  apiKey = (await aShopWithKey(app)).apiKey;
});
afterAll(async () => {
  await database?.close();
});

const payout = {
  merchant_operation_id: "order-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  number: "4111111111111111",
  name: "Ivan",
};

const post = (path: string, body: unknown) => merchant(app, apiKey, "POST", path, body);

function expectRefused(res: { status: number; body: Record<string, unknown> }, field: string) {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: "validation_failed", field });
}

describe("create: identifier and text fields", () => {
  it.each([
    ["merchant_operation_id", 255],
    ["client_id", 255],
    ["number", 64],
    ["name", 255],
    ["bankname", 64],
  ])("takes %s at %i characters and refuses one more", async (field, max) => {
    // A payout's number must also be a card or phone number of its rail (at most 19
    // digits), so the 64-character rule of `number` shows on a payment, which keeps it unused.
    const path = field === "number" ? "/v1/payment" : "/v1/payout";
    expect((await post(path, { ...payout, [field]: "7".repeat(max) })).status).toBe(200);
    expectRefused(await post(path, { ...payout, [field]: "7".repeat(max + 1) }), field);
  });

  it.each(["merchant_operation_id", "client_id", "number", "name", "bankname"])(
    "refuses a NUL in %s on every create endpoint",
    async (field) => {
      for (const path of ["/v1/payment", "/v1/payout", "/v1/payment/link"])
        expectRefused(await post(path, { ...payout, [field]: "a\u0000b" }), field);
    },
  );

  it("refuses control characters in identifiers, and a key longer than the unique index holds", async () => {
    expectRefused(
      await post("/v1/payment", { ...payout, merchant_operation_id: "a\nb" }),
      "merchant_operation_id",
    );
    expectRefused(await post("/v1/payment", { ...payout, client_id: "a\u001fb" }), "client_id");
    expectRefused(
      await post("/v1/payment", { ...payout, merchant_operation_id: "x".repeat(3000) }),
      "merchant_operation_id",
    );
  });
});

describe("get_operation_state and cancel_operation", () => {
  it("take a 255-character key and refuse 256, a NUL and a control character", async () => {
    for (const path of ["/v1/get_operation_state", "/v1/cancel_operation"]) {
      expect((await post(path, { merchant_operation_id: "k".repeat(255) })).status).toBe(200);
      for (const key of ["k".repeat(256), "a\u0000b", "a\u0007b"])
        expectRefused(await post(path, { merchant_operation_id: key }), "merchant_operation_id");
    }
  });

  it("refuses a NUL in a cancel reason, and keeps the 2048-byte limit", async () => {
    expectRefused(
      await post("/v1/cancel_operation", { merchant_operation_id: "k", reason: "a\u0000b" }),
      "reason",
    );
    expect(
      (await post("/v1/cancel_operation", { merchant_operation_id: "k", reason: "é".repeat(1024) })).status,
    ).toBe(200);
    expectRefused(
      await post("/v1/cancel_operation", { merchant_operation_id: "k", reason: `${"é".repeat(1024)}a` }),
      "reason",
    );
  });
});

describe("the admin API's free text", () => {
  it("refuses a NUL in a merchant's or a shop's name with 400 (the edge's own table would refuse it with 500)", async () => {
    expectRefused(await admin(app, "POST", "/admin/v1/merchants", { name: "a\u0000b" }), "name");
    const merchantId = (await admin(app, "POST", "/admin/v1/merchants", { name: "M" })).body.merchant_id;
    expectRefused(
      await admin(app, "POST", "/admin/v1/shops", { merchant_id: merchantId, name: "a\u0000b" }),
      "name",
    );
    expect((await admin(app, "POST", "/admin/v1/merchants", { name: "é".repeat(200) })).status).toBe(201);
    expectRefused(await admin(app, "POST", "/admin/v1/merchants", { name: "é".repeat(201) }), "name");
  });
});
