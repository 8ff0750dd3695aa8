import { randomUUID } from "node:crypto";
import { connectNats, type Nats } from "@gw/events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceRow, Operator, paymentBody, type TestShop, webhooksOf } from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// An event no consumer can apply (bytes that are not an OperationEvent, published where
// operation events go) reaches every consuming service's dead letters after its attempts,
// while the payments behind it are settled and their webhooks delivered; the operator
// sees it in the admin API, a retry fails again while nothing is fixed, and a discard
// closes it. The stack runs 3 attempts 100 ms apart instead of the default 10 over
// minutes.

interface DeadLetterJson {
  service: string;
  consumer: string;
  event_id: string;
  subject: string;
  attempts: number;
  error: string;
  first_failed_at: string;
  last_failed_at: string;
  status: string;
}

describe("dead letters across the stack", () => {
  let stack: TestStack;
  let operator: Operator;
  let nats: Nats;
  let shop: TestShop;
  const poisonId = randomUUID();

  beforeAll(async () => {
    stack = await startTestStack({
      extraEnv: { CONSUMER_MAX_ATTEMPTS: "3", CONSUMER_RETRY_BASE_MS: "100", CONSUMER_RETRY_MAX_MS: "400" },
    });
    operator = new Operator(stack);
    const provider = await operator.provider("dl");
    shop = await operator.newShop({
      name: "dead-letters",
      routes: { WT_RUB_C2C: { payin: [provider], payout: [provider], settlement_currency: "RUB" } },
    });
    nats = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "e2e-dead-letters");
  });

  afterAll(async () => {
    await nats?.nc.close();
    await shop?.receiver.stop();
    await stack?.stop();
  });

  const openDeadLetters = async () => {
    const res = await operator.admin("GET", "/dead-letters?status=open");
    expect(res.status).toBe(200);
    return (res.json.dead_letters as DeadLetterJson[]).filter((d) => d.event_id === poisonId);
  };

  it("records a poison event in each consuming service after 3 attempts, and settles the payment behind it", async () => {
    // Not a protobuf OperationEvent: wire type 7 does not exist, so every decoder throws.
    await nats.js.publish(
      `${stack.eventsPrefix}.operations.payment.completed`,
      new Uint8Array([0xff, 0xff, 0xff, 0xff]),
      {
        msgID: poisonId,
      },
    );
    const created = await shop.api.payment(paymentBody());
    expect(created.status).toBe(200);
    const operationId = created.json.operation_id as string;
    await operator.settle(operationId, { legs: ["1000.00"] });

    const letters = await pollUntil(
      "the poison event in the dead letters of operations, ledger and webhooks",
      openDeadLetters,
      (list) => list.length === 3,
    );
    expect(letters.map((d) => `${d.service}/${d.consumer}`).sort()).toEqual([
      "ledger/ledger",
      "operations/operations-pool-payins",
      "webhooks/webhooks",
    ]);
    for (const d of letters) {
      expect(d).toMatchObject({ subject: "operations.payment.completed", attempts: 3, status: "open" });
      expect(Object.keys(d).sort()).toEqual(
        [
          "attempts",
          "consumer",
          "error",
          "event_id",
          "first_failed_at",
          "last_failed_at",
          "service",
          "status",
          "subject",
        ].sort(),
      );
      expect(d.error).not.toBe("");
    }

    // The stream kept flowing past it: the payment was credited and its webhook delivered.
    const balances = await pollUntil(
      "the shop to be credited",
      () => shop.api.balances(),
      (r) => balanceRow(r, "RUB").balance === "975.00",
    );
    expect(balanceRow(balances, "RUB").balance).toBe("975.00");
    await pollUntil(
      "the completed webhook",
      async () => webhooksOf(shop.receiver, operationId, "payment.completed"),
      (hooks) => hooks.length > 0,
    );
  });

  it("keeps a dead letter open with one more attempt when its retry fails again", async () => {
    const res = await operator.admin("POST", `/dead-letters/ledger/ledger/${poisonId}/retry`, {
      operator: "e2e",
    });
    expect(res.status).toBe(412);
    expect(res.json.error.code).toBe("dead_letter_retry_failed");
    const ledger = (await openDeadLetters()).find((d) => d.service === "ledger");
    expect(ledger).toMatchObject({ status: "open", attempts: 4 });
  });

  it("closes each dead letter the operator discards, with the reason kept", async () => {
    for (const d of await openDeadLetters()) {
      const res = await operator.admin(
        "POST",
        `/dead-letters/${d.service}/${d.consumer}/${d.event_id}/discard`,
        {
          operator: "e2e",
          reason: "not an operation event",
        },
      );
      expect(res.status).toBe(200);
      expect(res.json.dead_letter).toMatchObject({
        status: "discarded",
        resolution_reason: "not an operation event",
      });
    }
    expect(await openDeadLetters()).toEqual([]);
    const all = await operator.admin("GET", "/dead-letters");
    expect((all.json.dead_letters as DeadLetterJson[]).filter((d) => d.event_id === poisonId)).toHaveLength(
      3,
    );
  });
});
