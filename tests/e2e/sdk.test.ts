import { randomUUID } from "node:crypto";
import { Decimal } from "@gw/money";
import { GatewayClient, GatewayError, isEventOf, WebhookRejectedError, WebhookVerifier } from "@gw/sdk";
import type { ProvisionedShop } from "@gw/stack/provision";
import { SandboxClient } from "@gw/stack/sandbox-client";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// The README's walk-through written against @gw/sdk, as a merchant integrates: typed
// calls, errors as GatewayError with the code, and webhooks verified into typed events.
describe("a merchant integrating with the TypeScript SDK", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let shop: ProvisionedShop;
  let gateway: GatewayClient;
  let sandbox: SandboxClient;
  let operationId: string;
  const payment = {
    merchant_operation_id: `order-${randomUUID()}`,
    client_id: "customer-1",
    method: "WT_RUB_C2C",
    amount: "1000.00",
    currency: "RUB",
  } as const;

  beforeAll(async () => {
    stack = await startTestStack();
    let secret: string | undefined;
    receiver = await startWebhookReceiver({ secret: () => secret });
    shop = await stack.provisionShop({ name: "sdk", webhookUrl: receiver.url });
    secret = shop.webhookSecret;
    gateway = new GatewayClient({ baseUrl: stack.urls.edge, apiKey: shop.apiKey });
    sandbox = new SandboxClient(stack.urls.sandbox);
  });

  afterAll(async () => {
    await receiver?.stop();
    await stack?.stop();
  });

  it("creates a payment and gets the same operation back when it repeats the create", async () => {
    const op = await gateway.createPayment({ ...payment });
    expect(op).toMatchObject({
      type: "payment",
      status: "pending",
      expected_amount: "1000.00",
      currency: "RUB",
    });
    expect(op.number).toMatch(/^\d{12,19}$/);
    operationId = op.operation_id;
    const again = await gateway.createPayment({ ...payment });
    expect(again.operation_id).toBe(operationId);
  });

  it("throws a GatewayError with the code when the same key comes with another body", async () => {
    const err = await gateway.createPayment({ ...payment, amount: "1001.00" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 412, code: "idempotency_conflict", noDecision: false });
    expect((err as GatewayError).requestId).toEqual(expect.any(String));
  });

  it("reads the payment completed, and the balance less the commission, once the sandbox settles it", async () => {
    await sandbox.settle(operationId, { legs: ["1000.00"] });
    const state = await pollUntil(
      "the payment to be completed",
      () => gateway.getOperationState({ operation_id: operationId }),
      (s) => s.status === "completed",
    );
    expect(state).toMatchObject({ actual_amount: "1000.00", commission_amount: "25.00" });
    const { balances } = await pollUntil(
      "the RUB balance to be credited",
      () => gateway.getBalances(),
      (b) => b.balances.some((row) => row.currency === "RUB" && !new Decimal(row.balance).isZero()),
    );
    expect(new Decimal(balances.find((row) => row.currency === "RUB")!.balance).eq("975.00")).toBe(true);
  });

  it("verifies the delivered webhook into a typed payment.completed event, and refuses it with another secret", async () => {
    const hook = await pollUntil(
      "the payment.completed webhook",
      async () =>
        receiver.received.find((h) => {
          const body = h.body as { type?: string; data?: { operation_id?: string } };
          return body.type === "payment.completed" && body.data?.operation_id === operationId;
        }),
      (h) => h !== undefined,
    );
    const event = new WebhookVerifier(shop.webhookSecret).verify(hook!.raw, hook!.headers);
    expect(isEventOf(event, "payment.completed")).toBe(true);
    expect(event.id).toBe(hook!.headers["webhook-id"]);
    expect(event.data).toMatchObject({
      operation_id: operationId,
      status: "completed",
      actual_amount: "1000.00",
    });
    const stranger = new WebhookVerifier(`whsec_${Buffer.from("not the shop's secret").toString("base64")}`);
    expect(() => stranger.verify(hook!.raw, hook!.headers)).toThrow(WebhookRejectedError);
  });

  it("cancels a payment created through the link call (payment_url null: the shop's hosted page is off)", async () => {
    const link = await gateway.createPaymentLink({
      ...payment,
      merchant_operation_id: `link-${randomUUID()}`,
    });
    expect(link).toHaveProperty("payment_url", null);
    const cancelled = await gateway.cancelOperation({
      operation_id: link.operation_id,
      reason: "customer left",
    });
    expect(cancelled).toMatchObject({ outcome: "cancelled", operation: { status: "cancelled" } });
  });

  it("creates a payout from the credited balance", async () => {
    const payout = await gateway.createPayout({
      merchant_operation_id: `payout-${randomUUID()}`,
      client_id: "customer-1",
      method: "WT_RUB_C2C",
      amount: "100.00",
      currency: "RUB",
      number: "4111111111111111",
    });
    expect(payout).toMatchObject({ type: "payout", status: "pending", expected_amount: "100.00" });
  });

  it("answers an operation of no shop as operation_not_found", async () => {
    const err = await gateway.getOperationState({ operation_id: randomUUID() }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "GatewayError", status: 404 });
  });

  it("keeps working on the default keep-alive fetch after the gateway refused a 2 MiB body unread", async () => {
    // No retries, so a dead socket left behind by the 413 would fail the next call (the
    // servers' own unread-body tests pin the Connection: close that prevents it).
    const once = new GatewayClient({ baseUrl: stack.urls.edge, apiKey: shop.apiKey, retry: { attempts: 1 } });
    const err = await once
      .createPayment({
        ...payment,
        merchant_operation_id: `big-${randomUUID()}`,
        client_id: "x".repeat(2 << 20),
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 413, code: "payload_too_large" });
    const { balances } = await once.getBalances();
    expect(balances.length).toBeGreaterThan(0);
  });
});
