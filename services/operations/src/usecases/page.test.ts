import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OperationsHarness, startHarness } from "../../test/harness.ts";

// The hosted page's read (GetPaymentPage) over the real operations service: only
// payments handed out as hosted links are readable, with page-safe fields only.

let h: OperationsHarness;
let shop: { shopId: string; merchantId: string };

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  await h.provider("pagepay", {
    mode: "accept",
    receipt_required: true,
    expires_in_seconds: 1800,
    requisites: { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" },
  });
  shop = await h.shop(["pagepay"]);
});
afterAll(() => h?.stop());

function aPayment(hostedPage: boolean) {
  return h.operations.createOperation({
    scope: shop,
    type: "payment",
    merchantOperationId: `mop-${randomUUID()}`,
    clientId: "client-1",
    method: "WT_RUB_C2C",
    amount: "1500.00",
    currency: "RUB",
    hostedPage,
  });
}

async function codeOf(p: Promise<unknown>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return (err as ConnectError).code;
}

describe("GetPaymentPage", () => {
  it("shows a hosted link's amount, requisites, expiry and outcome, and the scope for the upload", async () => {
    const { operation } = await aPayment(true);
    const { page, scope } = await h.operations.getPaymentPage({ operationId: operation!.operationId });
    expect(page).toMatchObject({
      operationId: operation!.operationId,
      amount: "1500.00",
      currency: "RUB",
      method: "WT_RUB_C2C",
      number: "2202201234567890",
      name: "Иван Иванович Иванов",
      outcome: "awaiting_receipt",
      receiptRequired: true,
    });
    expect(page?.expiresAt).toBe(operation!.expiresAt);
    expect(scope?.shopId).toBe(shop.shopId);
  });

  it("answers not found for a payment created without the hosted page, and for an unknown id", async () => {
    const { operation } = await aPayment(false);
    expect(await codeOf(h.operations.getPaymentPage({ operationId: operation!.operationId }))).toBe(
      Code.NotFound,
    );
    expect(await codeOf(h.operations.getPaymentPage({ operationId: randomUUID() }))).toBe(Code.NotFound);
    expect(await codeOf(h.operations.getPaymentPage({ operationId: "not-a-uuid" }))).toBe(
      Code.InvalidArgument,
    );
  });
});
