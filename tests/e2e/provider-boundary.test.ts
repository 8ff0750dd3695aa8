import { randomBytes } from "node:crypto";
import { Decimal } from "@gw/money";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceRow,
  newMop,
  Operator,
  paymentBody,
  type SandboxBehaviour,
  send,
  type TestShop,
} from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// The create path at the provider boundary (issue 12, part 2): an answer that comes after
// the attempt timeout, a provider that cannot be asked at all for a while, the payout
// reserve on the balance before the 200, and a payin passed over as unknown withdrawn at
// that provider. The demo pricing charges payouts 1% + 10.00: a payout of 1000.00 costs
// 1020.00. The sandbox's `delay_ms` of 7000 is beyond the gateway's 5000 ms attempt
// timeout, and the sandbox records such an operation at once (its status reads pending).

const cardPayout = () => ({
  merchant_operation_id: newMop("payout"),
  client_id: "customer-9",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  number: "2200123456789010",
});

/** A provider address where nothing listens: every call to it gets no answer. */
const DEAD_URL = "http://127.0.0.1:9";

describe("the provider boundary of a create", () => {
  let stack: TestStack;
  let operator: Operator;
  const shops: TestShop[] = [];

  beforeAll(async () => {
    stack = await startTestStack({
      // The reconciler looks often and asks again soon, so the background resolution of
      // an unresolved create is seen within the test's patience. A small batch keeps the
      // lease short (one round of the create budget plus a minute): a process killed while
      // it held the row delays the row by that lease, which the kill below may hit.
      extraEnv: {
        RECONCILE_BATCH: "8",
        RECONCILE_INTERVAL_MS: "500",
        RECONCILE_BACKOFF_MS: "1000",
        RECONCILE_BACKOFF_MAX_MS: "2000",
      },
    });
    operator = new Operator(stack);
  }, 180_000);

  afterAll(async () => {
    for (const shop of shops) await shop.receiver.stop();
    await stack?.stop();
  });

  /** A shop routing card payouts (and payins) through `providers`, credited with `credit`. */
  async function shopOf(name: string, route: { payin: string[]; payout: string[] }, credit?: string) {
    const shop = await operator.newShop({
      name,
      routes: { WT_RUB_C2C: { ...route, settlement_currency: "RUB" } },
    });
    shops.push(shop);
    if (credit) {
      await operator.adjust(shop.shopId, "RUB", credit);
      await pollUntil(
        "the credit on the balance",
        async () => balanceRow(await shop.api.balances(), "RUB"),
        (r) => new Decimal(r.balance).eq(credit),
      );
    }
    return shop;
  }

  const rub = async (shop: TestShop) => {
    const row = balanceRow(await shop.api.balances(), "RUB");
    return { balance: new Decimal(row.balance).toFixed(2), reserved: new Decimal(row.reserved).toFixed(2) };
  };

  const received = async (operationId: string) =>
    (await operator.sandboxOperation(operationId).catch(() => [])).map((v) => v.provider);

  it("gives a payout accepted late by the first provider to that provider alone: the second never receives it, and the first one's settle completes it", async () => {
    const late = await operator.provider("late", { payout: { mode: "accept", delay_ms: 7_000 } });
    const next = await operator.provider("next");
    const shop = await shopOf("late", { payin: [next], payout: [late, next] }, "10000.00");

    const res = await shop.api.payout(cardPayout());
    expect(res.status).toBe(200);
    expect(res.json.status).toBe("pending");
    const operationId = res.json.operation_id as string;
    expect(await received(operationId)).toEqual([late]);

    await operator.settle(operationId, { legs: ["1000.00"], provider: late });
    await pollUntil(
      "the payout to be completed",
      () => shop.api.state({ operation_id: operationId }),
      (r) => r.json?.status === "completed",
    );
    const settled = await pollUntil(
      "the reserve to be consumed",
      () => rub(shop),
      (r) => r.reserved === "0.00",
    );
    expect(settled).toEqual({ balance: "8980.00", reserved: "0.00" });
    expect(await received(operationId)).toEqual([late]);
  }, 60_000);

  it("gives a payout to the first provider when it records the create only after the attempt timeout: its early not_found passes nobody over", async () => {
    // The sandbox's `record_after_delay` fault: the create is recorded 7 s after it
    // arrived (beyond the 5 s attempt timeout, before the fifth not_found, when its
    // withdrawal by key would be asked); until then its status reads not_found.
    const queued = await operator.provider("queued", {
      payout: {
        mode: "accept",
        faults: { seed: "boundary", slow_ms: 7_000, create: { record_after_delay: 1 } },
      } as SandboxBehaviour,
    });
    const next = await operator.provider("next-q");
    const shop = await shopOf("queued", { payin: [next], payout: [queued, next] }, "10000.00");

    const res = await shop.api.payout(cardPayout());
    expect(res.status).toBe(200);
    expect(res.json.status).toBe("pending");
    const operationId = res.json.operation_id as string;
    expect(await received(operationId)).toEqual([queued]);
    expect(await rub(shop)).toEqual({ balance: "8980.00", reserved: "1020.00" });
  }, 60_000);

  it("answers 503 while the first provider's answer is unknown, keeps resolving it in the background across a process death, and a retry joins that resolution instead of restarting the cascade", async () => {
    // The first provider is registered at an address where nothing answers: its create
    // and its status question both get no answer, so the outcome stays unknown.
    const dark = `dark-${randomBytes(4).toString("hex")}`;
    const credentials = randomBytes(24).toString("base64url");
    const put = await send("PUT", `${stack.urls.sandbox}/control/providers/${dark}`, {
      json: { credentials },
    });
    expect(put.status).toBe(200);
    const register = (baseUrl: string) =>
      operator.admin("PUT", `/providers/${dark}`, {
        kind: "sandbox",
        base_url: baseUrl,
        credentials,
        methods: ["WT_RUB_C2C"],
      });
    expect((await register(DEAD_URL)).status).toBe(200);
    const next = await operator.provider("after-dark");
    const shop = await shopOf("dark", { payin: [next], payout: [dark, next] }, "5000.00");

    const body = cardPayout();
    const first = await shop.api.payout(body);
    expect(first.status).toBe(503);
    const again = await shop.api.payout(body);
    expect(again.status).toBe(503);
    expect(await received(first.json?.operation_id ?? "none")).toEqual([]);

    // The resolution is durable: it lives in the row (its cascade position), not in a
    // process, so it survives the operations process dying meanwhile.
    await stack.kill("operations");
    await stack.restart("operations");

    // The first provider becomes reachable: it never received the payout (its status is
    // not_found), so its withdrawal by key is asked, and only once it confirms (a tombstone:
    // a late create there is refused) does the resolution move on to the second provider.
    expect((await register(stack.urls.sandbox)).status).toBe(200);
    const state = await pollUntil(
      "the background resolution to route the payout",
      () => shop.api.state({ merchant_operation_id: body.merchant_operation_id }),
      (r) => r.status === 200,
      // Past the lease of a reconciler killed while it held the row (see the stack's env).
      120_000,
    );
    expect(state.json.status).toBe("pending");
    const operationId = state.json.operation_id as string;
    const views = await operator.sandboxOperation(operationId);
    expect(views.map((v) => [v.provider, v.status])).toEqual([
      [dark, "withdrawn"],
      [next, "pending"],
    ]);

    const joined = await shop.api.payout(body);
    expect(joined.status).toBe(200);
    expect(joined.json).toMatchObject({ operation_id: operationId, status: "pending" });
    expect(await rub(shop)).toEqual({ balance: "3980.00", reserved: "1020.00" });
  }, 240_000);

  it("shows a payout's reserve on the balance read right after the create's 200", async () => {
    const provider = await operator.provider("reserve");
    const shop = await shopOf("reserve", { payin: [provider], payout: [provider] }, "5000.00");

    const res = await shop.api.payout(cardPayout());
    expect(res.status).toBe(200);
    expect(await rub(shop)).toEqual({ balance: "3980.00", reserved: "1020.00" });
  }, 60_000);

  it("withdraws a payin at the provider it passed over as unknown, so a payer paying there anyway is refused", async () => {
    const late = await operator.provider("late-in", { payin: { mode: "accept", delay_ms: 7_000 } });
    const next = await operator.provider("next-in");
    const shop = await shopOf("late-in", { payin: [late, next], payout: [next] });

    const res = await shop.api.payment(paymentBody());
    expect(res.status).toBe(200);
    expect(res.json.status).toBe("pending");
    const operationId = res.json.operation_id as string;
    const views = await operator.sandboxOperation(operationId);
    expect(views.map((v) => [v.provider, v.status])).toEqual([
      [late, "withdrawn"],
      [next, "pending"],
    ]);
    const paidAnyway = await send("POST", `${stack.urls.sandbox}/control/operations/${operationId}/settle`, {
      json: { legs: ["1000.00"], provider: late },
    });
    expect(paidAnyway.status).toBe(409);
  }, 60_000);
});
