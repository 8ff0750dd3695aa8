import { randomUUID } from "node:crypto";
import { Decimal } from "@gw/money";
import type { ProvisionedShop } from "@gw/stack/provision";
import { SandboxClient } from "@gw/stack/sandbox-client";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MerchantClient, pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// The same walk-through with processes killed (SIGKILL, no goodbye) in the middle of it:
// every fact must still arrive once, through the outboxes, durable consumers, inboxes
// and the retries of the sandbox's callbacks and of webhook deliveries.
describe("a payment while services are killed and restarted", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let shop: ProvisionedShop;
  let merchant: MerchantClient;

  beforeAll(async () => {
    stack = await startTestStack();
    let secret: string | undefined;
    receiver = await startWebhookReceiver({ secret: () => secret });
    shop = await stack.provisionShop({ name: "faults", webhookUrl: receiver.url });
    secret = shop.webhookSecret;
    merchant = new MerchantClient(stack.urls.edge, shop.apiKey);
  });

  afterAll(async () => {
    await receiver?.stop();
    await stack?.stop();
  });

  it("ends with the right balance and exactly one webhook per event after operations, ledger and webhooks die", async () => {
    const op = await merchant.createPayment({
      merchant_operation_id: `order-${randomUUID()}`,
      client_id: "customer-2",
      method: "WT_RUB_C2C",
      amount: "2000.00",
      currency: "RUB",
    });
    expect(op.status).toBe("pending");
    const operationId = op.operation_id as string;

    // The payer pays while operations, ledger and webhooks are down: the sandbox's
    // callback cannot be taken, so the sandbox keeps retrying it.
    await stack.kill("operations");
    await stack.kill("ledger");
    await stack.kill("webhooks");
    await new SandboxClient(stack.urls.sandbox).settle(operationId, { legs: ["2000.00"] });

    await stack.restart("operations");
    const state = await pollUntil(
      "the payment to be completed after operations came back",
      () => merchant.operationState({ operation_id: operationId }),
      (s) => s.status === "completed",
      60_000,
    );
    expect(state).toMatchObject({
      actual_amount: "2000.00",
      commission_amount: "50.00",
      settlement_amount: "1950.00",
    });

    await stack.restart("ledger");
    await stack.restart("webhooks");
    const { balances } = await pollUntil(
      "the RUB balance to be credited after ledger came back",
      () => merchant.balances(),
      (b) => b.balances.some((row) => row.currency === "RUB" && !new Decimal(row.balance).isZero()),
      60_000,
    );
    expect(new Decimal(balances.find((row) => row.currency === "RUB")!.balance).eq("1950.00")).toBe(true);

    const ofThisPayment = () =>
      receiver.received.filter(
        (h) => (h.body as { data?: { operation_id?: string } }).data?.operation_id === operationId,
      );
    // Merchants get terminal results (payment.pending is not delivered): the completion
    // must arrive once, although it was published while webhooks was down.
    const typesOf = (hooks: ReturnType<typeof ofThisPayment>) =>
      hooks.map((h) => (h.body as { type?: string }).type).sort();
    await pollUntil(
      "the payment.completed webhook after webhooks came back",
      async () => ofThisPayment(),
      (hooks) => typesOf(hooks).includes("payment.completed"),
      60_000,
    );
    const hooks = ofThisPayment();
    expect(hooks.every((h) => h.verified)).toBe(true);
    const ids = hooks.map((h) => h.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(typesOf(hooks)).toEqual(["payment.completed"]);
  }, 240_000);

  it("credits a settled payment once, even when the ledger is killed again and restarted", async () => {
    await stack.kill("ledger");
    await stack.restart("ledger");
    const { balances } = await merchant.balances();
    expect(new Decimal(balances.find((row) => row.currency === "RUB")!.balance).eq("1950.00")).toBe(true);
  });
});
