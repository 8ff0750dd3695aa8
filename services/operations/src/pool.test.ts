import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { createLogger } from "@gw/log";
import { Decimal } from "@gw/money";
import { PoolPayoutEventSchema } from "@gw/proto/gateway/matching/v1/matching_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventually,
  failureOf,
  forceTransition,
  insertAbandonedRouting,
  type OperationsHarness,
  startHarness,
} from "../test/harness.ts";
import { PoolConnector } from "./connectors/pool.ts";
import { POOL_PROVIDER } from "./connectors/pool-provider.ts";
import { operationIdFor } from "./create.ts";
import { poolConsumers, SELF_MATCHING } from "./pool.ts";
import { listProviderFacts } from "./provider-facts.ts";
import { applyProviderResult } from "./provider-results.ts";

// The self-matching pool as a route entry, over real matching, ledger, receipts and
// sandbox services. The pool is shared by every shop of a method, so each test uses
// amounts that only its own payouts can take (exact closes win admission).

/** Short enough to watch a window end in a test, long enough for the steps before it. */
const WINDOW_MS = 6_000;

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 4_000,
    attemptTimeoutMs: 1_000,
    config: {
      POOL_WINDOW_MS: String(WINDOW_MS),
      POOL_SLOT_LIFETIME_MS: "600000",
      // A hand-off provider that does not answer is asked three times, 0.3 s and 0.6 s apart.
      POOL_HANDOFF_ATTEMPTS: "3",
      POOL_HANDOFF_BACKOFF_MS: "300",
      POOL_HANDOFF_BACKOFF_MAX_MS: "1000",
    },
    matchingConfig: { POOL_SWEEP_INTERVAL_MS: "200" },
  });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 }, { mode: "accept" });
  // Records a payout's create only 1 s after it arrives (past the 1 s attempt timeout).
  await h.provider(
    "queued",
    { mode: "accept" },
    { mode: "accept", faults: { seed: "pool", slow_ms: 1_000, create: { record_after_delay: 1 } } },
  );
});
afterAll(() => h?.stop());

/** A shop whose routes are given per direction, with the given pricing on both methods. */
async function shop(
  payin: string[],
  payout: string[],
  pricing = { percent: "0", fixed: "0" },
  settlementCurrency = "RUB",
) {
  const shopId = randomUUID();
  const merchantId = randomUUID();
  for (const method of ["WT_RUB_C2C", "WT_RUB_PHONE"]) {
    await h.operations.putRoute({ shopId, method, payin, payout, settlementCurrency });
    const tier = { minAmount: "0.01", maxAmount: "10000000.00", ...pricing };
    await h.ledger.putPricing({ shopId, method, payin: [tier], payout: [tier] });
  }
  return { shopId, merchantId };
}

type Shop = Awaited<ReturnType<typeof shop>>;

const payment = (s: Shop, amount: string, method = "WT_RUB_C2C") =>
  h.operations.createOperation({
    scope: s,
    type: "payment",
    merchantOperationId: `pay-${randomUUID()}`,
    clientId: "payer",
    method,
    amount,
    currency: "RUB",
  });

const payout = (s: Shop, amount: string, method = "WT_RUB_C2C") =>
  h.operations.createOperation({
    scope: s,
    type: "payout",
    merchantOperationId: `out-${randomUUID()}`,
    clientId: "payee",
    method,
    amount,
    currency: "RUB",
    ...(method === "WT_RUB_PHONE"
      ? { number: "+79001112233", name: "Pool Payee", bankname: "tinkoff" }
      : { number: "2200111122223333", name: "Pool Payee" }),
  });

/** What the receipt flow does when a receipt proves a payment: a leg and `completed` with its event. */
async function completeByReceipt(operationId: string, amount: string) {
  const row = await h.store.findAnyById(operationId);
  if (!row) throw new Error("no row");
  await h.sql`
    insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at)
    values (${randomUUID()}, ${row.id}, ${SELF_MATCHING}, ${`receipt:${randomUUID()}`}, ${amount}, now())`;
  const next = await forceTransition(
    h.store,
    row,
    { status: "completed", actual_amount: amount },
    { emit: true },
  );
  if (!next) throw new Error("row changed");
}

const state = (s: Shop, id: string) =>
  h.operations.getOperation({ scope: s, id: { case: "operationId", value: id } });
const poolPayout = async (id: string) => (await h.matching.getPoolPayout({ operationId: id })).payout;
const balance = async (shopId: string) => {
  const { balances } = await h.ledger.getBalances({ shopId });
  return balances.find((b) => b.currency === "RUB");
};

/**
 * A fault in matching's database: every insert into `matching.<table>` whose `column` is
 * `id` raises. Resolves the function that removes the fault.
 */
async function failMatchingInserts(
  table: "slots" | "pool_payouts",
  column: "payin_id" | "operation_id",
  id: string,
): Promise<() => Promise<void>> {
  const name = `test_fail_${table}`;
  await h.sql.unsafe(`
    create or replace function matching.${name}() returns trigger language plpgsql
    as $$ begin raise exception 'injected fault'; end $$`);
  await h.sql.unsafe(`
    create trigger ${name} before insert on matching.${table} for each row
    when (new.${column} = '${id}') execute function matching.${name}()`);
  return async () => {
    await h.sql.unsafe(`drop trigger ${name} on matching.${table}`);
  };
}

describe("a payin routed to self_matching", () => {
  it("is admitted into a pool payout and answers awaiting_confirmation with the payout's destination, a receipt and the slot's expiry", async () => {
    const merchant = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const out = (await payout(merchant, "1500.00", "WT_RUB_PHONE")).operation;
    expect(out?.status).toBe("pending");
    await eventually(
      () => poolPayout(out?.operationId ?? ""),
      (p) => expect(p?.freeAmount).toBe("1500.00"),
    );

    const pay = (await payment(merchant, "500.00", "WT_RUB_PHONE")).operation;
    expect(pay?.status).toBe("awaiting_confirmation");
    expect(pay?.number).toBe("+79001112233");
    expect(pay?.name).toBe("Pool Payee");
    expect(pay?.bankname).toBe("tinkoff");
    expect(pay?.externalConfirmation).toMatchObject({ required: true, methods: ["receipt"] });
    const slot = await h.matching.admit({
      payinId: pay?.operationId ?? "",
      shopId: merchant.shopId,
      method: "WT_RUB_PHONE",
      currency: "RUB",
      amount: "500.00",
      slotLifetimeMs: 600_000n,
    });
    expect(slot.created).toBe(false);
    expect(slot.slot?.payoutId).toBe(out?.operationId);
    expect(new Date(pay?.expiresAt ?? "").toISOString()).toBe(
      new Date(slot.slot?.expiresAt ?? "").toISOString(),
    );
    expect((await poolPayout(out?.operationId ?? ""))?.freeAmount).toBe("1000.00");

    // A cancel frees the slot at once: the amount is back in the free remainder.
    const cancelled = await h.operations.cancelOperation({
      scope: merchant,
      id: { case: "operationId", value: pay?.operationId ?? "" },
      reason: "payer left",
    });
    expect(cancelled.outcome).toBe("cancelled");
    await eventually(
      () => poolPayout(out?.operationId ?? ""),
      (p) => {
        expect(p?.freeAmount).toBe("1500.00");
        expect(p?.reservedAmount).toBe("0.00");
      },
      5_000,
    );

    // No provider follows the pool in the payout route and nothing was paid: when the
    // window ends the payout is rejected and its reserve returns to the shop.
    const done = await eventually(
      () => state(merchant, out?.operationId ?? ""),
      (r) => expect(r.operation?.status).toBe("rejected"),
      WINDOW_MS + 15_000,
    );
    expect(done.operation?.actualAmount).toBe("0.00");
    await eventually(
      () => balance(merchant.shopId),
      (b) => expect(b).toMatchObject({ balance: "0.00", reserved: "0.00" }),
    );
  }, 40_000);

  it("moves on to the next provider when the pool cannot take the amount", async () => {
    const merchant = await shop([SELF_MATCHING, "acme"], ["acme"]);
    // Below the method minimum and equal to no free remainder: not admissible.
    const pay = (await payment(merchant, "77.00")).operation;
    expect(pay?.status).toBe("pending");
    expect(pay?.externalConfirmation).toBeUndefined();
  });

  it("takes matching's silence on the admit for an unknown answer, not a decline: the slot is withdrawn at the pool and the next provider asked", async () => {
    const merchant = await shop([SELF_MATCHING, "acme"], [SELF_MATCHING]);
    // Phone rails: the payout this leaves open until its window ends takes no card payin
    // of the tests that follow (the pool is shared, best fit wins).
    const out = (await payout(merchant, "1610.00", "WT_RUB_PHONE")).operation;
    await eventually(
      () => poolPayout(out?.operationId ?? ""),
      (p) => expect(p?.freeAmount).toBe("1610.00"),
    );
    const mop = `pay-${randomUUID()}`;
    const id = operationIdFor(merchant.shopId, mop);
    // A fault in matching's database fails this payin's admit: matching gives no decision.
    const undo = await failMatchingInserts("slots", "payin_id", id);
    try {
      const created = await h.operations.createOperation({
        scope: merchant,
        type: "payment",
        merchantOperationId: mop,
        clientId: "payer",
        method: "WT_RUB_PHONE",
        amount: "1610.00",
        currency: "RUB",
      });
      expect(created.operation).toMatchObject({ operationId: id, status: "pending" });
    } finally {
      await undo();
    }
    expect((await h.store.findAnyById(id))?.provider).toBe("acme");
    // Passed over like a provider that did not answer a payin: withdrawn there (the slot
    // it may hold released), so the pool keeps its whole remainder.
    await eventually(
      () => h.sql`
        select status, passed_over from operations.withdrawals
        where operation_id = ${id} and provider = ${SELF_MATCHING}`,
      (rows) => expect(rows[0]).toMatchObject({ status: "withdrawn", passed_over: true }),
    );
    expect((await poolPayout(out?.operationId ?? ""))?.freeAmount).toBe("1610.00");
  });

  it("has its slot freed when a cancel wins over a create that died after the pool admitted it", async () => {
    const merchant = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const out = (await payout(merchant, "1620.00", "WT_RUB_PHONE")).operation;
    await eventually(
      () => poolPayout(out?.operationId ?? ""),
      (p) => expect(p?.freeAmount).toBe("1620.00"),
    );
    const req = {
      scope: merchant,
      type: "payment",
      merchantOperationId: `pay-${randomUUID()}`,
      clientId: "payer",
      method: "WT_RUB_PHONE",
      amount: "1620.00",
      currency: "RUB",
    };
    // A create in progress (its deadline ahead) whose admit the pool answered; then its
    // process died, and a cancel was accepted meanwhile.
    const id = await insertAbandonedRouting(h.store, merchant, req, new Date(Date.now() + 60_000));
    await h.matching.admit({
      payinId: id,
      shopId: merchant.shopId,
      method: "WT_RUB_PHONE",
      currency: "RUB",
      amount: "1620.00",
      slotLifetimeMs: 600_000n,
    });
    expect((await poolPayout(out?.operationId ?? ""))?.freeAmount).toBe("0.00");
    const cancel = await h.operations.cancelOperation({
      scope: merchant,
      id: { case: "operationId", value: id },
      reason: "payer left",
    });
    expect(cancel.outcome).toBe("cancelled");
    await h.sql`
      update operations.operations set routing_deadline = now() - interval '1 minute' where id = ${id}`;

    // A retry takes the dead create over: the cancel wins, and the slot is released.
    const retry = await h.operations.createOperation(req);
    expect(retry.operation?.status).toBe("cancelled");
    await eventually(
      () => poolPayout(out?.operationId ?? ""),
      (p) => expect(p).toMatchObject({ freeAmount: "1620.00", reservedAmount: "0.00" }),
    );
  });
});

describe("a payout routed to self_matching", () => {
  it("completes when two payins fill it, with one receipt item per payin, and the ledger posts both sides", async () => {
    const pricing = { percent: "1", fixed: "0" };
    const payer = await shop([SELF_MATCHING], [SELF_MATCHING], pricing);
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING], pricing);
    const out = (await payout(payee, "2000.00")).operation;
    const id = out?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const first = (await payment(payer, "1200.00")).operation;
    const second = (await payment(payer, "800.00")).operation;
    expect(first?.number).toBe("2200111122223333");
    expect(second?.number).toBe("2200111122223333");

    await completeByReceipt(first?.operationId ?? "", "1200.00");
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.paidAmount).toBe("1200.00"),
    );
    expect((await state(payee, id)).operation?.status).toBe("pending");
    await completeByReceipt(second?.operationId ?? "", "800.00");

    const done = await eventually(
      () => state(payee, id),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("2000.00");
    expect(done.receipts.map((r) => r.amount)).toEqual(["1200.00", "800.00"]);
    expect(done.receipts.every((r) => r.receiptUrl === undefined)).toBe(true);
    expect(done.receiptEvidenceStatus).toBe("complete");
    const contributions = (await poolPayout(id))?.contributions ?? [];
    expect(done.receipts.map((r) => r.id)).toEqual(contributions.map((c) => c.id));

    // Payer shop: credited 2000.00 less 1 % = 1980.00. Payee shop: its reserve of
    // 2000.00 + 1 % was consumed, so its balance is -2020.00 with nothing reserved.
    await eventually(
      () => balance(payer.shopId),
      (b) => expect(b?.balance).toBe("1980.00"),
    );
    await eventually(
      () => balance(payee.shopId),
      (b) => expect(b).toMatchObject({ balance: "-2020.00", reserved: "0.00" }),
    );
  }, 30_000);

  it("enters the pool from its pending event when the AddPayout right after its create failed", async () => {
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const mop = `out-${randomUUID()}`;
    const id = operationIdFor(payee.shopId, mop);
    // A fault in matching's database refuses this payout's AddPayout, whoever sends it.
    const undo = await failMatchingInserts("pool_payouts", "operation_id", id);
    try {
      const created = await h.operations.createOperation({
        scope: payee,
        type: "payout",
        merchantOperationId: mop,
        clientId: "payee",
        method: "WT_RUB_C2C",
        amount: "1730.00",
        currency: "RUB",
        number: "2200111122223333",
        name: "Pool Payee",
      });
      expect(created.operation).toMatchObject({ operationId: id, status: "pending" });
      // Recorded pending (the ledger reserves it), but not in the pool.
      expect((await failureOf(h.matching.getPoolPayout({ operationId: id }))).code).toBe(Code.NotFound);
    } finally {
      await undo();
    }
    // No reconciler runs here (its delay is 30 min): the payout.pending event's redelivery
    // puts it in.
    const entered = await eventually(
      () => h.matching.getPoolPayout({ operationId: id }).catch(() => undefined),
      (r) => expect(r?.payout).toMatchObject({ status: "open", amount: "1730.00", freeAmount: "1730.00" }),
      40_000,
    );
    expect(entered?.payout?.shopId).toBe(payee.shopId);
  }, 60_000);

  it("hands the remainder to the next provider of the payout route when the window ends, completes with its leg, and records only what that provider reports beyond it", async () => {
    const payer = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "acme"]);
    const out = (await payout(payee, "1000.00")).operation;
    const id = out?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const pay = (await payment(payer, "300.00")).operation;
    await completeByReceipt(pay?.operationId ?? "", "300.00");
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.paidAmount).toBe("300.00"),
    );

    // The window ends: 700.00 goes to acme as a provider payout under the same id.
    await eventually(
      () => h.store.findAnyById(id),
      (row) => expect(row?.provider).toBe("acme"),
      WINDOW_MS + 15_000,
    );
    expect((await poolPayout(id))?.handedOffAmount).toBe("700.00");
    expect((await state(payee, id)).operation?.status).toBe("pending");
    const settled = await h.settle(id, { legs: ["700.00"] });
    expect(settled.ok).toBe(true);
    const done = await eventually(
      () => state(payee, id),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("1000.00");
    expect(done.receipts.map((r) => r.amount).sort()).toEqual(["300.00", "700.00"]);
    const total = done.receipts.reduce((sum, r) => sum.plus(r.amount), new Decimal(0));
    expect(total.toFixed(2)).toBe("1000.00");

    // acme reports its leg and 100.00 more: only the 100.00 is money beyond the payout,
    // although acme's total (800.00) is below the actual amount the pool's legs fill.
    const [own] = await h.sql<{ provider_leg_id: string }[]>`
      select provider_leg_id from operations.legs where operation_id = ${id} and provider = 'acme'`;
    const legs = [
      { id: own?.provider_leg_id ?? "", amount: "700.00", completedAt: new Date() },
      { id: "acme-extra", amount: "100.00", completedAt: new Date() },
    ];
    await h.sql.begin((tx) =>
      applyProviderResult(
        { store: h.store, logger: createLogger("pool-test", "silent") },
        tx,
        "acme",
        { operationId: id, status: "completed", legs },
        "callback",
      ),
    );
    const facts = (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === id);
    expect(facts).toMatchObject([{ kind: "amount_mismatch", amount: "100.00", direction: "payout" }]);
  }, 40_000);

  it("shows the handed-off share of a provider that completed without legs as one synthetic contribution, evidence partial", async () => {
    const payer = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "acme"]);
    const out = (await payout(payee, "1200.00")).operation;
    const id = out?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const pay = (await payment(payer, "450.00")).operation;
    await completeByReceipt(pay?.operationId ?? "", "450.00");
    await eventually(
      () => h.store.findAnyById(id),
      (row) => expect(row?.provider).toBe("acme"),
      WINDOW_MS + 15_000,
    );
    const settled = await h.settle(id, { legs: [] });
    expect(settled.ok).toBe(true);
    const done = await eventually(
      () => state(payee, id),
      (r) => expect(r.operation?.status).toBe("completed"),
    );
    expect(done.operation?.actualAmount).toBe("1200.00");
    expect(done.receiptEvidenceStatus).toBe("partial");
    const contribution = (await poolPayout(id))?.contributions[0]?.id;
    expect(done.receipts.map((r) => [r.id, r.amount]).sort()).toEqual(
      [
        [contribution, "450.00"],
        [id, "750.00"],
      ].sort(),
    );
    expect(done.receipts.every((r) => r.receiptUrl === undefined)).toBe(true);
  }, 40_000);

  it("completes as a self-matching partial when the provider it was handed off to rejects, so the ledger keeps what the pool paid", async () => {
    const payer = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "acme"]);
    const out = (await payout(payee, "1100.00")).operation;
    const id = out?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const pay = (await payment(payer, "400.00")).operation;
    await completeByReceipt(pay?.operationId ?? "", "400.00");
    await eventually(
      () => h.store.findAnyById(id),
      (row) => expect(row?.provider).toBe("acme"),
      WINDOW_MS + 15_000,
    );
    // Pending under the provider, with what the pool paid held as legs: no recorded fact yet.
    const handedOff = (await state(payee, id)).operation;
    expect(handedOff?.status).toBe("pending");
    expect(handedOff?.recordedAmount).toBeUndefined();
    expect(handedOff?.recordedCurrency).toBeUndefined();
    const settled = await h.settle(id, { status: "rejected" });
    expect(settled.ok).toBe(true);
    const done = await eventually(
      () => state(payee, id),
      (r) => expect(["completed", "rejected"]).toContain(r.operation?.status),
    );
    expect(done.operation?.status).toBe("completed");
    expect(done.operation?.actualAmount).toBe("400.00");
    // The ledger fact is what the pool paid, and the settlement is settled on it.
    expect(done.operation).toMatchObject({
      recordedAmount: "400.00",
      recordedCurrency: "RUB",
      settlementAmount: "400.00",
      settlementCurrency: "RUB",
    });
    expect(done.receipts.map((r) => r.amount)).toEqual(["400.00"]);
    // The payee shop paid 400.00 through the pool: that much leaves it, the rest of its reserve returns.
    await eventually(
      () => balance(payee.shopId),
      (b) => expect(b).toMatchObject({ balance: "-400.00", reserved: "0.00" }),
    );
  }, 40_000);
  it("completes as a self-matching partial when no provider follows the pool, recording actual × rate in the settlement currency", async () => {
    await h.ledger.putFxRate({ from: "RUB", to: "USDT", rate: "0.010512", source: "pool-test" });
    const payer = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING], { percent: "0", fixed: "0" }, "USDT");
    const out = (await payout(payee, "1300.00")).operation;
    const id = out?.operationId ?? "";
    expect(out).toMatchObject({ status: "pending", fxRate: "0.010512", fxSource: "pool-test" });
    expect(out?.recordedAmount).toBeUndefined();
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const pay = (await payment(payer, "520.00")).operation;
    await completeByReceipt(pay?.operationId ?? "", "520.00");
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.paidAmount).toBe("520.00"),
    );
    // Partly paid but still pending: a pending response never carries the recorded fact.
    const partlyPaid = (await state(payee, id)).operation;
    expect(partlyPaid?.status).toBe("pending");
    expect(partlyPaid?.recordedAmount).toBeUndefined();

    // The window ends and nobody follows the pool in the route: completed with what the pool paid.
    const done = await eventually(
      () => state(payee, id),
      (r) => expect(r.operation?.status).toBe("completed"),
      WINDOW_MS + 15_000,
    );
    // 520.00 × 0.010512 = 5.46624 USDT.
    expect(done.operation).toMatchObject({
      actualAmount: "520.00",
      currency: "RUB",
      fxRate: "0.010512",
      recordedAmount: "5.466240",
      recordedCurrency: "USDT",
      settlementAmount: "5.466240",
      settlementCurrency: "USDT",
    });
    expect(done.receipts.map((r) => r.amount)).toEqual(["520.00"]);
  }, 40_000);
});

describe("a hand-off to a provider that records its create late", () => {
  it("gives the remainder to that provider: its not_found is no decline, and the next provider never receives it", async () => {
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "queued", "acme"]);
    const id = (await payout(payee, "1210.00")).operation?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    await eventually(
      () => h.store.findAnyById(id),
      (row) => expect(row?.provider).not.toBe(SELF_MATCHING),
      WINDOW_MS + 20_000,
    );
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "pending", provider: "queued" });
    const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
    const held = (await res.json()) as { received: { provider: string }[] };
    expect(held.received.map((r) => r.provider)).toEqual(["queued"]);
  }, 45_000);
});

describe("a hand-off to a provider that does not answer", () => {
  // A provider that accepts connections and never answers a create: every ask runs into
  // the attempt timeout (1 s here). `asked` holds the bodies of the creates it received.
  // Its status question hangs too, until a test makes it answer 404 not_found and confirm
  // the withdrawal of the key (a tombstone: its create, if it arrives, is refused).
  let silent: Server;
  const asked: string[] = [];
  let statusAnswer: "none" | "not_found" = "none";
  beforeAll(async () => {
    silent = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8");
      });
      req.on("end", () => {
        if (req.method === "POST" && req.url?.endsWith("/withdraw")) {
          if (statusAnswer !== "not_found") return;
          const reference = decodeURIComponent(req.url.split("/").at(-2) ?? "");
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ id: reference, reference, direction: "payout", status: "withdrawn" }));
        } else if (req.method === "POST") asked.push(body);
        else if (statusAnswer === "not_found") {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { code: "not_found", message: "never received" } }));
        }
      });
    });
    const url = await new Promise<string>((resolve) =>
      silent.listen(0, "127.0.0.1", () =>
        resolve(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`),
      ),
    );
    await h.operations.putProvider({
      name: "silent",
      kind: "sandbox",
      baseUrl: url,
      credentials: "secret-silent-0123456789",
      methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
    });
  });
  afterAll(async () => {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  });

  const handOffRow = (id: string) =>
    h.sql<{ status: string; position: number; attempts: number; provider: string | null }[]>`
      select status, position, attempts, provider from operations.pool_handoffs where operation_id = ${id}`;

  it("is asked again with backoff while other payouts are handed off, never passed over while it gives no answer, and passed over once it confirms the withdrawal of the key", async () => {
    statusAnswer = "none";
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "silent", "acme"]);
    const other = await shop([SELF_MATCHING], [SELF_MATCHING, "acme"]);
    const stuckId = (await payout(payee, "1170.00")).operation?.operationId ?? "";
    const otherId = (await payout(other, "1180.00")).operation?.operationId ?? "";
    for (const id of [stuckId, otherId])
      await eventually(
        () => poolPayout(id),
        (p) => expect(p?.status).toBe("open"),
      );

    // The windows end: the other payout goes to acme while "silent" is still being asked.
    await eventually(
      () => h.store.findAnyById(otherId),
      (row) => expect(row?.provider).toBe("acme"),
      WINDOW_MS + 15_000,
    );
    const meanwhile = await h.store.findAnyById(stuckId);
    expect(meanwhile).toMatchObject({ status: "pending", provider: SELF_MATCHING });
    // The decision was committed before any provider was asked: the hand-off to "silent".
    expect(await handOffRow(stuckId)).toEqual([
      expect.objectContaining({ status: "asking", position: 0, provider: null }),
    ]);

    // Past the three asks after which the old driver gave up, "silent" still holds it:
    // it may have taken the remainder, so nobody else is asked.
    await eventually(
      () => handOffRow(stuckId),
      (rows) => expect(rows[0]?.attempts).toBeGreaterThanOrEqual(4),
      // Each ask is the create's timeout and the status question's timeout.
      30_000,
    );
    expect(await h.store.findAnyById(stuckId)).toMatchObject({ status: "pending", provider: SELF_MATCHING });
    expect(await handOffRow(stuckId)).toEqual([expect.objectContaining({ status: "asking", position: 0 })]);

    // Not found there, and its withdrawal by key confirmed: passed over, acme takes the remainder.
    statusAnswer = "not_found";
    await eventually(
      () => h.store.findAnyById(stuckId),
      (row) => expect(row?.provider).toBe("acme"),
      20_000,
    );
    expect(await handOffRow(stuckId)).toEqual([
      expect.objectContaining({ status: "accepted", position: 1, provider: "acme" }),
    ]);
    expect((await state(payee, stuckId)).operation?.status).toBe("pending");
  }, 70_000);

  it("ends a payout nobody paid into as rejected, with its event, once its only provider confirms the withdrawal of a key it has no record of", async () => {
    statusAnswer = "not_found";
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING, "silent"]);
    const id = (await payout(payee, "1190.00")).operation?.operationId ?? "";
    await eventually(
      () => poolPayout(id),
      (p) => expect(p?.status).toBe("open"),
    );
    const done = await eventually(
      () => state(payee, id),
      (r) => expect(r.operation?.status).toBe("rejected"),
      WINDOW_MS + 20_000,
    );
    expect(done.operation?.actualAmount ?? "0.00").toBe("0.00");
    // Asked twice: its first not_found gets one more round to record the create, then its
    // withdrawal by key is asked and confirmed.
    expect(asked.filter((u) => u.includes(id)).length).toBe(2);
    expect(await handOffRow(id)).toEqual([expect.objectContaining({ status: "exhausted", position: 0 })]);
    const events = await h.sql<{ n: number }[]>`
      select count(*)::int as n from operations.outbox
      where subject like '%payout.rejected' and position(${Buffer.from(id)} in payload) > 0`;
    expect(events[0]?.n).toBe(1);
  }, 45_000);
});

/** The pool as the operations service has it, for its connector and consumers. */
const poolDeps = () => ({
  store: h.store,
  matching: h.matching,
  connectorFor: () => undefined,
  callbackBaseUrl: "",
  attemptTimeoutMs: 1_000,
  slotLifetimeMs: 600_000,
  windowMs: WINDOW_MS,
  logger: createLogger("pool-test", "silent"),
});

describe("a payout and its pool payout", () => {
  it("enters the pool only once its create recorded it: the connector's acceptance puts nothing in", async () => {
    const connector = new PoolConnector(poolDeps());
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING]);
    const id = randomUUID();
    const answer = await connector.create(
      POOL_PROVIDER,
      {
        operationId: id,
        shopId: payee.shopId,
        direction: "payout",
        method: "WT_RUB_PHONE",
        amount: "1751.00",
        currency: "RUB",
        number: "+79001112233",
        name: "Pool Payee",
        bankname: "tinkoff",
        callbackUrl: "",
      },
      AbortSignal.timeout(5_000),
    );
    expect(answer).toEqual({ outcome: "accepted", receiptRequired: false });
    expect(await connector.status(POOL_PROVIDER, id, AbortSignal.timeout(5_000))).toEqual({
      status: "not_found",
    });
    // A create through the service records it first, then puts it in.
    const out = (await payout(payee, "1751.00", "WT_RUB_PHONE")).operation;
    expect(out?.status).toBe("pending");
    expect((await poolPayout(out?.operationId ?? ""))?.freeAmount).toBe("1751.00");
  });

  it("has a closed pool payout refused while it is routing, and recorded as a provider fact once another provider holds it", async () => {
    const payee = await shop([SELF_MATCHING], ["acme"]);
    const req = {
      scope: payee,
      type: "payout",
      merchantOperationId: `out-${randomUUID()}`,
      clientId: "payee",
      method: "WT_RUB_C2C",
      amount: "1762.00",
      currency: "RUB",
      number: "2200111122223333",
      name: "Pool Payee",
    };
    const id = await insertAbandonedRouting(h.store, payee, req, new Date(Date.now() + 60_000));
    const closed = create(PoolPayoutEventSchema, {
      eventId: randomUUID(),
      type: "pool_payout.completed",
      occurredAt: new Date().toISOString(),
      payout: {
        operationId: id,
        shopId: payee.shopId,
        method: "WT_RUB_C2C",
        currency: "RUB",
        amount: "1762.00",
        status: "completed",
        contributions: [
          {
            id: randomUUID(),
            payinId: randomUUID(),
            amount: "1762.00",
            completedAt: new Date().toISOString(),
          },
        ],
      },
    });
    const { applier } = poolConsumers(poolDeps()).payouts;
    const handle = () => h.store.transaction((tx) => applier.handle(tx, closed, randomUUID()));
    // Still routing: no provider recorded yet, so the event is redelivered, not dropped.
    await expect(handle()).rejects.toThrow(/still being routed/);
    const routing = await h.store.findAnyById(id);
    expect(routing?.status).toBe("routing");

    // The create is recorded at acme: what the pool paid is money no payout accounts for.
    const atAcme = await forceTransition(
      h.store,
      routing as NonNullable<typeof routing>,
      { status: "pending", provider: "acme", routing_deadline: null },
      { emit: true },
    );
    expect(atAcme?.status).toBe("pending");
    await handle();
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "pending", provider: "acme" });
    const facts = (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === id);
    expect(facts).toMatchObject([
      { kind: "not_routed", provider: SELF_MATCHING, direction: "payout", amount: "1762.00" },
    ]);
    // Redelivered: recorded once.
    await handle();
    expect(
      (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === id),
    ).toHaveLength(1);
  });
});

describe("a payout handed off by the pool", () => {
  it("records no provider fact when a stale hand-off reaches it at the provider that took it: its contributions are its legs already", async () => {
    const payee = await shop([SELF_MATCHING], ["acme"]);
    const req = {
      scope: payee,
      type: "payout",
      merchantOperationId: `out-${randomUUID()}`,
      clientId: "payee",
      method: "WT_RUB_C2C",
      amount: "1763.00",
      currency: "RUB",
      number: "2200111122223333",
      name: "Pool Payee",
    };
    const id = await insertAbandonedRouting(h.store, payee, req, new Date(Date.now() + 60_000));
    const routing = await h.store.findAnyById(id);
    // Handed off: acme took the remainder, and what the pool paid is a leg of the payout.
    await forceTransition(
      h.store,
      routing as NonNullable<typeof routing>,
      { status: "pending", provider: "acme", routing_deadline: null },
      { emit: true },
    );
    const contribution = {
      id: randomUUID(),
      payinId: randomUUID(),
      amount: "700.00",
      completedAt: new Date().toISOString(),
    };
    await h.sql`
      insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at)
      values (${contribution.id}, ${id}, ${SELF_MATCHING}, ${`pool:${contribution.payinId}`}, ${contribution.amount}, now())`;
    // The hand-off event again (a lagging consumer, or the reconciler on a stale row).
    const handedOff = create(PoolPayoutEventSchema, {
      eventId: randomUUID(),
      type: "pool_payout.handed_off",
      occurredAt: new Date().toISOString(),
      payout: {
        operationId: id,
        shopId: payee.shopId,
        method: "WT_RUB_C2C",
        currency: "RUB",
        amount: "1763.00",
        status: "handed_off",
        handedOffAmount: "1063.00",
        contributions: [contribution],
      },
    });
    const { applier } = poolConsumers(poolDeps()).payouts;
    await h.store.transaction((tx) => applier.handle(tx, handedOff, randomUUID()));
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "pending", provider: "acme" });
    expect((await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === id)).toEqual(
      [],
    );
  });
});

describe("the pool's connector", () => {
  it("answers the status question with the pool payout: pending while open, not_found for a payout never put in", async () => {
    const connector = new PoolConnector(poolDeps());
    const payee = await shop([SELF_MATCHING], [SELF_MATCHING]);
    // Phone rails, the last test of the file: no other test's payin can land in it.
    const id = (await payout(payee, "1740.00", "WT_RUB_PHONE")).operation?.operationId ?? "";
    const signal = AbortSignal.timeout(5_000);
    expect(await connector.status(POOL_PROVIDER, id, signal)).toEqual({ status: "pending" });
    expect(await connector.status(POOL_PROVIDER, randomUUID(), signal)).toEqual({ status: "not_found" });
  });
});
