import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ProvisionedShop } from "@gw/stack/provision";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MerchantClient, pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// One create, followed through the JSON logs of the whole stack (debug level, which adds
// a line per RPC served and per event consumed): the edge's request, the operations RPC
// it made and the webhooks consumer's handling of the event the create wrote to the
// outbox all name the same trace id and request id. The stack runs with internal access
// on (service tokens), so this also proves every hop of the flow is authorised.

interface LogLine {
  service: string;
  line: Record<string, unknown>;
}

function logLines(file: string): LogLine[] {
  const out: LogLine[] = [];
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    // `[edge] {...}`, or `[edge#2] {...}` for a replica (E2E_REPLICAS): the service is `edge`.
    const match = /^\[([a-z-]+)(?:#\d+)?\] (\{.*\})$/.exec(raw);
    if (!match) continue;
    try {
      out.push({ service: match[1] as string, line: JSON.parse(match[2] as string) });
    } catch {
      // Not a JSON log line (a stack notice or a child's stray output).
    }
  }
  return out;
}

describe("traces and log context across the stack", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let shop: ProvisionedShop;
  let merchant: MerchantClient;

  beforeAll(async () => {
    stack = await startTestStack({ extraEnv: { LOG_LEVEL: "debug" } });
    let secret: string | undefined;
    receiver = await startWebhookReceiver({ secret: () => secret });
    shop = await stack.provisionShop({ name: "observed", webhookUrl: receiver.url });
    secret = shop.webhookSecret;
    merchant = new MerchantClient(stack.urls.edge, shop.apiKey);
    await merchant.createPayment({
      merchant_operation_id: `order-${randomUUID()}`,
      client_id: "customer-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    // A whole stack starts here; on a loaded machine that takes longer than the default.
  }, 240_000);

  afterAll(async () => {
    await receiver?.stop();
    await stack?.stop();
  });

  it("joins the edge request, the operations RPC and the consumer of the create's event in one trace", async () => {
    const edge = await pollUntil(
      "the edge's log line of the create",
      async () =>
        logLines(stack.logFile).find(
          (l) => l.service === "edge" && l.line.msg === "request" && l.line.path === "/v1/payment",
        ),
      (l) => l !== undefined,
    );
    const traceId = edge!.line.trace_id as string;
    const requestId = edge!.line.request_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(edge!.line.shop_id).toBe(shop.shopId);

    const rpc = logLines(stack.logFile).find(
      (l) =>
        l.service === "operations" &&
        l.line.msg === "rpc" &&
        l.line.method === "gateway.operations.v1.OperationsService/CreateOperation" &&
        l.line.trace_id === traceId,
    );
    expect(rpc?.line).toMatchObject({ code: "ok", request_id: requestId, shop_id: shop.shopId });

    // `payment.pending` reaches only the consumer that acts on it (libs/events
    // CONSUMER_SUBJECTS): the pool's payins consumer, after the outbox relay and NATS. The
    // shop's route has no pool, so the consumer skips it (outcome `skipped`, no inbox
    // row), still within the trace.
    const consumed = await pollUntil(
      "the pool payins consumer's line for the payment's pending event",
      async () =>
        logLines(stack.logFile).find(
          (l) =>
            l.line.consumer === "operations-pool-payins" &&
            l.line.msg === "event handled" &&
            String(l.line.subject).endsWith(".operations.payment.pending") &&
            l.line.trace_id === traceId,
        ),
      (l) => l !== undefined,
    );
    // The consumer's line names the request that caused the event (its shop is the
    // webhooks consumer's to log, which this event does not reach).
    expect(consumed!.line).toMatchObject({ trace_id: traceId, request_id: requestId, outcome: "skipped" });
  });

  it("keeps service tokens, API keys, the admin token and webhook secrets out of every log", async () => {
    const logs = readFileSync(stack.logFile, "utf8");
    expect(logs).toContain('"trace_id"');
    expect(logs).toContain(shop.shopId);
    const secret = shop.webhookSecret.replace(/^whsec_/, "");
    for (const [what, value] of [
      ["api key", shop.apiKey],
      ["admin token", stack.adminToken],
      ["webhook secret", secret],
      ["service token", "gw1."],
      ["bearer credential", "Bearer "],
    ] as const) {
      expect(logs.includes(value), `${what} found in ${stack.logFile}`).toBe(false);
    }
  });
});
