import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { createLogger } from "@gw/log";
import { OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventually,
  failureOf,
  forceTransition,
  insertAbandonedRouting,
  type OperationsHarness,
  startHarness,
} from "../test/harness.ts";
import { connectorFor } from "./connectors/index.ts";
import { PoolConnector } from "./connectors/pool.ts";
import { operationIdFor } from "./create.ts";
import { operationEvent } from "./events.ts";
import { type PoolDeps, poolConsumers, SELF_MATCHING } from "./pool.ts";
import { listProviderFacts } from "./provider-facts.ts";
import { PAYMENT_REFUSED } from "./refusals.ts";

// A pool slot lives as long as its payment: matching never ends it on its own clock, so a
// payment that completes always settles it, and an overpayment settles the slot for its
// amount and books only the excess on suspense. Real ledger, matching, receipts and
// sandbox services; amounts are unique per test (the pool is shared).

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 3_000,
    attemptTimeoutMs: 1_000,
    config: { POOL_WINDOW_MS: "600000", POOL_SLOT_LIFETIME_MS: "600000" },
    // Matching sweeps every 100 ms: a slot it still expired on its own clock would be gone
    // within the pauses below.
    matchingConfig: { POOL_SWEEP_INTERVAL_MS: "100" },
  });
});
afterAll(() => h?.stop());

async function shop(route: string[]) {
  const shopId = randomUUID();
  const merchantId = randomUUID();
  for (const method of ["WT_RUB_C2C", "WT_RUB_PHONE"]) {
    await h.operations.putRoute({ shopId, method, payin: route, payout: route, settlementCurrency: "RUB" });
    const tier = { minAmount: "0.01", maxAmount: "10000000.00", percent: "0", fixed: "0" };
    await h.ledger.putPricing({ shopId, method, payin: [tier], payout: [tier] });
  }
  return { shopId, merchantId };
}
type Shop = Awaited<ReturnType<typeof shop>>;

const payment = (s: Shop, amount: string) =>
  h.operations.createOperation({
    scope: s,
    type: "payment",
    merchantOperationId: `pay-${randomUUID()}`,
    clientId: "payer",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
  });

const payout = (s: Shop, amount: string, mop = `out-${randomUUID()}`) =>
  h.operations.createOperation({
    scope: s,
    type: "payout",
    merchantOperationId: mop,
    clientId: "payee",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
    number: "2200111122223333",
    name: "Pool Payee",
  });

const row = async (id: string) => {
  const r = await h.store.findAnyById(id);
  if (!r) throw new Error(`no operation ${id}`);
  return r;
};

/** What the receipt flow does when a receipt proves a payment: a leg and `completed` with its event. */
async function completeByReceipt(operationId: string, amount: string) {
  const before = await row(operationId);
  await h.sql`
    insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at)
    values (${randomUUID()}, ${before.id}, ${SELF_MATCHING}, ${`receipt:${randomUUID()}`}, ${amount}, now())`;
  const next = await forceTransition(
    h.store,
    before,
    { status: "completed", actual_amount: amount },
    { emit: true },
  );
  if (!next) throw new Error("row changed");
}

const slotStatus = async (payinId: string) => {
  const [s] = await h.sql<
    { status: string }[]
  >`select status from matching.slots where payin_id = ${payinId}`;
  return s?.status;
};

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The ids of a payin's pending and awaiting-confirmation events, oldest first. */
async function routedEventIds(operationId: string): Promise<string[]> {
  const rows = await h.sql<{ id: string; payload: Buffer }[]>`
    select id::text, payload from operations.outbox
    where subject ~ '\\.payment\\.(pending|awaiting_confirmation)$' order by seq`;
  return rows
    .filter((r) => fromBinary(OperationEventSchema, r.payload).operation?.operationId === operationId)
    .map((r) => r.id);
}

const inPoolInbox = async (eventId: string) =>
  (
    await h.sql`select 1 from operations.inbox
      where consumer = 'operations-pool-payins' and event_id = ${eventId}`
  ).length === 1;

describe("a pool slot lives as long as its payment", () => {
  it("is never released by matching while its payment awaits a receipt or is in manual check, so completing the payment settles the slot and the payout", async () => {
    const merchant = await shop([SELF_MATCHING]);
    const cases = [
      { amount: "701.37", status: "awaiting_confirmation" as const },
      { amount: "702.41", status: "manual_check" as const },
    ];
    const pairs: { out: string; pay: string }[] = [];
    for (const c of cases) {
      const out = (await payout(merchant, c.amount)).operation?.operationId ?? "";
      await eventually(
        () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
        (p) => expect(p?.payout?.freeAmount).toBe(c.amount),
      );
      const pay = (await payment(merchant, c.amount)).operation;
      expect(pay?.status).toBe("awaiting_confirmation");
      const id = pay?.operationId ?? "";
      if (c.status === "manual_check") {
        const moved = await forceTransition(
          h.store,
          await row(id),
          { status: "manual_check" },
          { emit: true },
        );
        expect(moved?.status).toBe("manual_check");
      }
      // The slot's own expiry passes while the payment is alive (its payable window is the
      // payment's: operations ends the slot when the payment itself expires).
      await h.sql`update matching.slots set expires_at = now() - interval '1 second' where payin_id = ${id}`;
      pairs.push({ out, pay: id });
    }
    // Several sweeps of matching pass.
    await pause(1_000);
    for (const { out, pay } of pairs) {
      expect(await slotStatus(pay)).toBe("reserved");
      expect((await row(pay)).status).not.toBe("rejected");
      await completeByReceipt(pay, (await row(pay)).expected_amount ?? "");
      await eventually(
        () => row(out),
        (r) => expect(r).toMatchObject({ status: "completed", actual_amount: r.expected_amount }),
      );
      expect(await slotStatus(pay)).toBe("confirmed");
    }
    const facts = await listProviderFacts(h.store, { limit: 500 });
    expect(facts.filter((f) => pairs.some((p) => p.pay === f.operationId))).toEqual([]);
  });

  it("settles the slot for its amount when the payer paid more, and records only the excess as a provider fact booked on suspense", async () => {
    const merchant = await shop([SELF_MATCHING]);
    const out = (await payout(merchant, "812.34")).operation?.operationId ?? "";
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
      (p) => expect(p?.payout?.freeAmount).toBe("812.34"),
    );
    const pay = (await payment(merchant, "812.34")).operation?.operationId ?? "";
    await completeByReceipt(pay, "900.00");
    await eventually(
      () => row(out),
      (r) => expect(r).toMatchObject({ status: "completed", actual_amount: "812.34" }),
    );
    const pooled = (await h.matching.getPoolPayout({ operationId: out })).payout;
    expect(pooled?.contributions.map((c) => [c.payinId, c.amount])).toEqual([[pay, "812.34"]]);
    const facts = await eventually(
      async () => (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === pay),
      (f) => expect(f).toHaveLength(1),
    );
    expect(facts[0]).toMatchObject({
      kind: "slot_refused",
      direction: "payout",
      amount: "87.66",
      currency: "RUB",
      status: "open",
    });
    // The ledger books the excess on the payin shop's suspense account.
    await eventually(
      () => h.sql<{ kind: string }[]>`
        select t.kind from ledger.transfers t where t.operation_id = ${pay} and t.kind like 'provider_fact%'`,
      (t) => expect(t).toHaveLength(1),
    );
  });

  it("is released when another provider of the route took its payin (an Admit answered too late), since nothing else would end it", async () => {
    const name = `acme-${randomUUID().slice(0, 8)}`;
    await h.provider(name, { mode: "accept", expires_in_seconds: 900 }, { mode: "accept" });
    const merchant = await shop([SELF_MATCHING, name]);
    const out = (await payout(merchant, "733.19")).operation?.operationId ?? "";
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
      (p) => expect(p?.payout?.freeAmount).toBe("733.19"),
    );
    // The pool admitted the payin, but the create never saw the answer and went on (here:
    // the create asks the pool for another amount, which it cannot take, so the next
    // provider takes the payment).
    const mop = `pay-${randomUUID()}`;
    const id = operationIdFor(merchant.shopId, mop);
    await h.matching.admit({
      payinId: id,
      shopId: merchant.shopId,
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "733.19",
      slotLifetimeMs: 600_000n,
    });
    const pay = await h.operations.createOperation({
      scope: merchant,
      type: "payment",
      merchantOperationId: mop,
      clientId: "payer",
      method: "WT_RUB_C2C",
      amount: "733.20",
      currency: "RUB",
    });
    expect(pay.operation).toMatchObject({ operationId: id, status: "pending" });
    expect((await row(id)).provider).toBe(name);
    await eventually(
      () => slotStatus(id),
      (s) => expect(s).toBe("released"),
    );
    const freed = await h.matching.getPoolPayout({ operationId: out });
    expect(freed.payout).toMatchObject({ freeAmount: "733.19", reservedAmount: "0.00" });
    // The pool was asked (it declined), so its consumer applied the pending event.
    const [pending] = await routedEventIds(id);
    expect(await inPoolInbox(pending ?? "")).toBe(true);
  });

  it("costs the pool's consumer nothing when the payin's route has no pool: its pending event is acked without an inbox row", async () => {
    const name = `acme-${randomUUID().slice(0, 8)}`;
    await h.provider(name, { mode: "accept", expires_in_seconds: 900 }, { mode: "accept" });
    const plain = (await payment(await shop([name]), "734.11")).operation;
    expect(plain?.status).toBe("pending");
    // A later payin the pool was asked for (it cannot take the amount): its event comes
    // after the plain one's in the stream, which the consumer reads in order.
    const after = (await payment(await shop([SELF_MATCHING, name]), "77.00")).operation;
    expect(after?.status).toBe("pending");
    const [afterEvent] = await routedEventIds(after?.operationId ?? "");
    await eventually(
      () => inPoolInbox(afterEvent ?? ""),
      (applied) => expect(applied).toBe(true),
    );
    const [plainEvent] = await routedEventIds(plain?.operationId ?? "");
    expect(plainEvent).toBeDefined();
    expect(await inPoolInbox(plainEvent ?? "")).toBe(false);
  });

  it("is released when a driver that died after its Admit is taken over under a route without the pool", async () => {
    const name = `acme-${randomUUID().slice(0, 8)}`;
    await h.provider(name, { mode: "accept", expires_in_seconds: 900 }, { mode: "accept" });
    const merchant = await shop([SELF_MATCHING, name]);
    const out = (await payout(merchant, "736.41")).operation?.operationId ?? "";
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
      (p) => expect(p?.payout?.freeAmount).toBe("736.41"),
    );
    // A create claimed the key, the pool admitted it, and the create's process died before
    // recording anything: the row is `routing` past its deadline, the slot reserved.
    const req = {
      scope: merchant,
      type: "payment",
      merchantOperationId: `pay-${randomUUID()}`,
      clientId: "payer",
      method: "WT_RUB_C2C",
      amount: "736.41",
      currency: "RUB",
    };
    const id = await insertAbandonedRouting(h.store, merchant, req);
    await h.matching.admit({
      payinId: id,
      shopId: merchant.shopId,
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "736.41",
      slotLifetimeMs: 600_000n,
    });
    expect(await slotStatus(id)).toBe("reserved");
    // The pool leaves the route; the retried create takes the routing over and the other
    // provider takes the payin. Nothing of the current route says the pool was asked.
    await h.operations.putRoute({
      shopId: merchant.shopId,
      method: "WT_RUB_C2C",
      payin: [name],
      payout: [name],
      settlementCurrency: "RUB",
    });
    const pay = await h.operations.createOperation(req);
    expect(pay.operation).toMatchObject({ operationId: id, status: "pending" });
    await eventually(
      () => slotStatus(id),
      (s) => expect(s).toBe("released"),
    );
  });

  it("is released when its payin's create was refused after an Admit that answered too late, and a late release never touches the slot of a retry the pool took", async () => {
    const merchant = await shop([SELF_MATCHING]);
    const out = (await payout(merchant, "745.61")).operation?.operationId ?? "";
    const other = (await payout(merchant, "745.60")).operation?.operationId ?? "";
    for (const [id, amount] of [
      [out, "745.61"],
      [other, "745.60"],
    ] as const)
      await eventually(
        () => h.matching.getPoolPayout({ operationId: id }).catch(() => undefined),
        (p) => expect(p?.payout?.freeAmount).toBe(amount),
      );
    // The pool admitted the payin, but the create never saw the answer; asked again, the
    // pool answers that slot, which does not fit the payin (here: another amount), so it
    // declines, and nobody else is on the route: the create is refused, nothing announced.
    const mop = `pay-${randomUUID()}`;
    const id = operationIdFor(merchant.shopId, mop);
    await h.matching.admit({
      payinId: id,
      shopId: merchant.shopId,
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "745.61",
      slotLifetimeMs: 600_000n,
    });
    const create = () =>
      h.operations.createOperation({
        scope: merchant,
        type: "payment",
        merchantOperationId: mop,
        clientId: "payer",
        method: "WT_RUB_C2C",
        amount: "745.60",
        currency: "RUB",
      });
    expect((await failureOf(create())).info?.code).toBe("no_provider_accepted");
    const refused = await row(id);
    expect(refused).toMatchObject({ status: "rejected", provider: null });
    await eventually(
      () => slotStatus(id),
      (s) => expect(s).toBe("released"),
    );
    const freed = await h.matching.getPoolPayout({ operationId: out });
    expect(freed.payout).toMatchObject({ freeAmount: "745.61", reservedAmount: "0.00" });

    // The merchant retries: the pool admits the payin afresh, into the payout that fits.
    const retry = await create();
    expect(retry.operation).toMatchObject({ operationId: id, status: "awaiting_confirmation" });
    expect(await slotStatus(id)).toBe("reserved");
    // The refusal's event delivered again now (late) leaves the retry's slot alone.
    const late = fromBinary(
      OperationEventSchema,
      operationEvent(h.store.prefix, refused, [], PAYMENT_REFUSED).payload,
    );
    const { applier } = poolConsumers(poolDeps()).payins;
    await h.store.transaction((tx) => applier.handle(tx, late, randomUUID()));
    expect(await slotStatus(id)).toBe("reserved");
    expect((await h.matching.getPoolPayout({ operationId: other })).payout).toMatchObject({
      freeAmount: "0.00",
      reservedAmount: "745.60",
    });
  });
});

describe("a release that reaches matching before its attempt's Admit", () => {
  it("makes the late Admit of that attempt reserve nothing, while a retry of the create is admitted afresh", async () => {
    const merchant = await shop([SELF_MATCHING]);
    const mop = `pay-${randomUUID()}`;
    const id = operationIdFor(merchant.shopId, mop);
    const create = () =>
      h.operations.createOperation({
        scope: merchant,
        type: "payment",
        merchantOperationId: mop,
        clientId: "payer",
        method: "WT_RUB_C2C",
        amount: "746.13",
        currency: "RUB",
      });
    // Nothing in the pool fits: the create is refused.
    expect((await failureOf(create())).info?.code).toBe("no_provider_accepted");
    const refused = await row(id);
    const out = (await payout(merchant, "746.13")).operation?.operationId ?? "";
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
      (p) => expect(p?.payout?.freeAmount).toBe("746.13"),
    );
    // The pool's withdrawal of the refused attempt (its Admit timed out) finds no slot yet;
    // then that attempt's Admit reaches matching.
    const connector = new PoolConnector(poolDeps());
    const signal = AbortSignal.timeout(5_000);
    expect((await connector.cancel(undefined, id, signal)).outcome).toBe("withdrawn");
    const late = await connector.create(
      undefined,
      {
        operationId: id,
        shopId: merchant.shopId,
        direction: "payin",
        method: "WT_RUB_C2C",
        amount: "746.13",
        currency: "RUB",
        callbackUrl: "",
        generation: BigInt(refused.version) - 1n,
      },
      signal,
    );
    expect(late.outcome).toBe("declined");
    expect(await slotStatus(id)).toBeUndefined();
    expect((await h.matching.getPoolPayout({ operationId: out })).payout).toMatchObject({
      freeAmount: "746.13",
      reservedAmount: "0.00",
    });
    // The merchant retries: a newer attempt, admitted afresh.
    expect((await create()).operation).toMatchObject({ operationId: id, status: "awaiting_confirmation" });
    const [slot] = await h.sql<{ status: string; generation: string }[]>`
      select status, generation::text as generation from matching.slots where payin_id = ${id}`;
    expect(slot?.status).toBe("reserved");
    expect(BigInt(slot?.generation ?? "0")).toBeGreaterThan(BigInt(refused.version));
  });
});

/** The pool as the operations service has it, for handing its consumer an event directly. */
const poolDeps = (): PoolDeps => ({
  store: h.store,
  matching: h.matching,
  connectorFor,
  callbackBaseUrl: "",
  attemptTimeoutMs: 1_000,
  slotLifetimeMs: 600_000,
  windowMs: 600_000,
  logger: createLogger("operations-test", "silent"),
});

describe("a cancelled pool payin", () => {
  it("has its slot released by the pool's consumer even when its withdrawal was given up", async () => {
    expect(poolConsumers(poolDeps()).payins.subjects).toContain("operations.payment.cancelled");
    const merchant = await shop([SELF_MATCHING]);
    const out = (await payout(merchant, "733.19")).operation?.operationId ?? "";
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }).catch(() => undefined),
      (p) => expect(p?.payout?.freeAmount).toBe("733.19"),
    );
    const pay = (await payment(merchant, "733.19")).operation;
    expect(pay?.status).toBe("awaiting_confirmation");
    const id = pay?.operationId ?? "";
    expect(await slotStatus(id)).toBe("reserved");
    // Its withdrawal already gave up (matching unreachable for all its attempts): the
    // cancel's withdrawal row stays as it is, and the driver never asks it.
    await h.sql`
      insert into operations.withdrawals (operation_id, provider, status, last_error)
      values (${id}, ${SELF_MATCHING}, 'gave_up', 'matching unavailable (test)')`;
    const cancelled = await h.operations.cancelOperation({
      scope: merchant,
      id: { case: "operationId", value: id },
      reason: "payer left",
    });
    expect(cancelled.outcome).toBe("cancelled");
    await eventually(
      () => slotStatus(id),
      (s) => expect(s).toBe("released"),
    );
    expect(
      (await h.sql`select status from operations.withdrawals where operation_id = ${id}`)[0],
    ).toMatchObject({
      status: "gave_up",
    });
    await eventually(
      () => h.matching.getPoolPayout({ operationId: out }),
      (p) => expect(p.payout).toMatchObject({ freeAmount: "733.19", reservedAmount: "0.00" }),
    );
  }, 30_000);
});
