import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Decimal } from "@gw/money";
import type { ProvisionedShop } from "@gw/stack/provision";
import { SandboxClient } from "@gw/stack/sandbox-client";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MerchantClient, pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// The walk-through of the README, as a merchant would do it: an operator sets up a shop
// through the admin API, the merchant creates a payment, the payer pays (the sandbox
// settles it), and the merchant sees the state, the balance and a signed webhook.
describe("the first payment through the whole stack", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let shop: ProvisionedShop;
  let merchant: MerchantClient;
  let sandbox: SandboxClient;
  let operationId: string;
  const merchantOperationId = `order-${randomUUID()}`;

  beforeAll(async () => {
    stack = await startTestStack();
    let secret: string | undefined;
    receiver = await startWebhookReceiver({ secret: () => secret });
    shop = await stack.provisionShop({ name: "first", webhookUrl: receiver.url });
    secret = shop.webhookSecret;
    merchant = new MerchantClient(stack.urls.edge, shop.apiKey);
    sandbox = new SandboxClient(stack.urls.sandbox);
  });

  afterAll(async () => {
    await receiver?.stop();
    await stack?.stop();
  });

  it("answers a new payment with 200, status pending and the card to pay to", async () => {
    const op = await merchant.createPayment({
      merchant_operation_id: merchantOperationId,
      client_id: "customer-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    expect(op).toMatchObject({
      type: "payment",
      status: "pending",
      method: "WT_RUB_C2C",
      expected_amount: "1000.00",
      actual_amount: "0.00",
      currency: "RUB",
    });
    expect(op.operation_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(op.number).toMatch(/^\d{12,19}$/);
    expect(op).not.toHaveProperty("recorded_amount");
    operationId = op.operation_id as string;
  });

  it("completes the payment once the sandbox settles it", async () => {
    await sandbox.settle(operationId, { legs: ["1000.00"] });
    const state = await pollUntil(
      "the payment to be completed",
      () => merchant.operationState({ operation_id: operationId }),
      (s) => s.status === "completed",
    );
    expect(state).toMatchObject({
      operation_id: operationId,
      status: "completed",
      actual_amount: "1000.00",
      commission_amount: "25.00",
      settlement_amount: "975.00",
      settlement_currency: "RUB",
    });
  });

  it("credits the shop's balance with the amount less the 2.5% commission", async () => {
    const { balances } = await pollUntil(
      "the RUB balance to be credited",
      () => merchant.balances(),
      (b) => b.balances.some((row) => row.currency === "RUB" && !new Decimal(row.balance).isZero()),
    );
    const rub = balances.find((row) => row.currency === "RUB")!;
    expect(new Decimal(rub.balance).eq("975.00")).toBe(true);
    expect(new Decimal(rub.reserved).isZero()).toBe(true);
    expect(new Decimal(rub.current_minus).isZero()).toBe(true);
  });

  it("delivers a Standard-Webhooks-signed webhook of the completed payment", async () => {
    const hook = await pollUntil(
      "the payment.completed webhook",
      async () =>
        receiver.received.find((h) => {
          const body = h.body as { type?: string; data?: { operation_id?: string } };
          return body.type === "payment.completed" && body.data?.operation_id === operationId;
        }),
      (h) => h !== undefined,
    );
    // Verified here again, with the library a merchant uses, from the bytes received.
    const payload = new Webhook(shop.webhookSecret).verify(hook!.raw, hook!.headers) as {
      id: string;
      data: Record<string, unknown>;
    };
    expect(payload.id).toBe(hook!.headers["webhook-id"]);
    expect(payload.data).toMatchObject({
      operation_id: operationId,
      merchant_operation_id: merchantOperationId,
      status: "completed",
      actual_amount: "1000.00",
    });
    expect(() =>
      new Webhook(Buffer.from("not the shop's secret").toString("base64")).verify(hook!.raw, hook!.headers),
    ).toThrow();
  });

  it("never writes the API key, the admin token or the webhook secret into any service's log", async () => {
    // A failed request must be logged too: an unknown key and a wrong admin token.
    await fetch(`${stack.urls.edge}/v1/balances`, { headers: { "x-api-key": `${shop.apiKey}x` } });
    await fetch(`${stack.urls.edge}/admin/v1/merchants`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.adminToken}x`, "content-type": "application/json" },
      body: "{}",
    });
    // The logs are not empty: requests were logged, so the absence below means something.
    // Services write their logs asynchronously; under load the lines of the requests above
    // reach the file a moment later, so the read waits for them (the refused admin call is
    // the last one sent).
    const logs = await vi.waitFor(
      () => {
        const text = readFileSync(stack.logFile, "utf8");
        expect(text).toContain(operationId);
        expect(text).toContain('"path":"/admin/v1/merchants","status":401');
        return text;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(logs).toContain('"request_id"');
    const secret = shop.webhookSecret.replace(/^whsec_/, "");
    for (const [what, value] of [
      ["api key", shop.apiKey],
      ["admin token", stack.adminToken],
      ["webhook secret", secret],
    ] as const) {
      expect(logs.includes(value), `${what} found in ${stack.logFile}`).toBe(false);
    }
  });
});
