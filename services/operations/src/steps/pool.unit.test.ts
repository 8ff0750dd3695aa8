import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createLogger } from "@gw/log";
import {
  ConfirmPaymentRequestSchema,
  CreateOperationRequestSchema,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import { FakeLedger } from "../../test/fakes/ledger.ts";
import { FakeMatching } from "../../test/fakes/matching.ts";
import { FakeReceipts } from "../../test/fakes/receipts.ts";
import { MemoryConnector } from "../connectors/memory.ts";
import { parseCreate } from "../domain/create-request.ts";
import { MemoryOperationStore } from "../repository/memory/store.ts";
import { confirmPayment } from "../usecases/confirm.ts";
import { onPayinCompleted } from "../usecases/pool-events.ts";
import { claimAndRoute } from "./create.ts";
import type { CreateDeps } from "./create-deps.ts";
import { SELF_MATCHING } from "./pool.ts";
import { PoolConnector } from "./pool-connector.ts";
import type { PoolDeps } from "./pool-deps.ts";
import { WithdrawalDriver } from "./withdrawals.ts";

/**
 * The self-matching pool as a route entry on the in-memory tier: the memory store, a
 * memory provider, and the fake ledger, matching and receipts services (each held to its
 * contract with the real one). What the integration suite (pool.test.ts) shows over the
 * real services, here for the paths that need neither NATS nor a pool window: admission,
 * a decline, matching's silence, the receipt that settles a slot and completes the payout.
 */

const logger = createLogger("operations-pool-unit", "silent");

const PAYEE = { number: "2200111122223333", name: "Pool Payee" };

/** A shop routed `payin` / `payout`, priced at 0 %, over one memory provider `acme`. */
async function world(payin: string[], payout: string[] = [SELF_MATCHING]) {
  const store = new MemoryOperationStore();

  const connector = new MemoryConnector();
  const ledger = new FakeLedger();
  const matching = new FakeMatching();
  const receipts = new FakeReceipts();
  const shopId = randomUUID();
  await store.putProvider(connector.register("acme", {}));
  await store.putRoute(shopId, "WT_RUB_C2C", { payin, payout, settlementCurrency: "RUB" });
  const ledgerClient = ledger.client();
  const tier = { minAmount: "1", maxAmount: "1000000", percent: "0", fixed: "0" };
  await ledgerClient.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [tier] });
  // Every Admit operations sends, as sent: a late copy of one can be replayed.
  const matchingClient = matching.client();
  const admits: Parameters<typeof matchingClient.admit>[0][] = [];
  const pool: PoolDeps = {
    store,
    matching: {
      ...matchingClient,
      admit: (req, options) => {
        admits.push(req);
        return matchingClient.admit(req, options);
      },
    },
    connectorFor: (kind) => connectorFor(kind),
    callbackBaseUrl: "http://edge.invalid",
    attemptTimeoutMs: 200,
    slotLifetimeMs: 20 * 60_000,
    windowMs: 60 * 60_000,
    logger,
  };
  const poolConnector = new PoolConnector(pool);
  const connectorFor = (kind: string) =>
    kind === SELF_MATCHING ? poolConnector : kind === "memory" ? connector : undefined;
  const withdrawals = new WithdrawalDriver(
    { store, connectorFor, logger },
    { attempts: 3, backoffMs: 10, backoffMaxMs: 10, intervalMs: 1_000, batchSize: 8, attemptTimeoutMs: 200 },
  );
  const deps: CreateDeps = {
    store,
    ledger: ledgerClient,
    connectorFor,
    callbackBaseUrl: "http://edge.invalid",
    budgetMs: 2_000,
    attemptTimeoutMs: 200,
    logger,
    pool,
    withdrawals,
  };
  const createOperation = (type: "payment" | "payout", amount: string) =>
    claimAndRoute(
      deps,
      parseCreate(
        create(CreateOperationRequestSchema, {
          scope: { shopId, merchantId: randomUUID() },
          type,
          merchantOperationId: `mop-${randomUUID()}`,
          clientId: "client-1",
          method: "WT_RUB_C2C",
          amount,
          currency: "RUB",
          ...(type === "payout" ? PAYEE : {}),
        }),
      ),
      new AbortController().signal,
    ).then(({ row }) => row);
  /** The payer's receipt for `id`, reviewed as completed, then what the pool's payins consumer does. */
  const payByReceipt = async (id: string) => {
    const file = new Uint8Array(randomBytes(32));
    receipts.judge(file, { verdict: "completed" });
    const confirmed = await confirmPayment(
      { store, receipts: receipts.client(), logger },
      create(ConfirmPaymentRequestSchema, {
        scope: { shopId },
        operationId: id,
        confirmationType: "receipt",
        file,
        contentType: "application/pdf",
      }),
    );
    const row = await store.findAnyById(id);
    if (row) await onPayinCompleted(pool, row);
    return confirmed.operation;
  };
  const poolPayout = async (id: string) => (await pool.matching.getPoolPayout({ operationId: id })).payout;
  const rub = async () =>
    (await ledgerClient.getBalances({ shopId })).balances.find((b) => b.currency === "RUB");
  return {
    store,
    matching,
    matchingClient,
    admits,
    pool,
    create: createOperation,
    payByReceipt,
    poolPayout,
    rub,
  };
}

describe("the self-matching pool on the in-memory tier", () => {
  it("puts a payout recorded under the pool into it, admits payins into it, and completes it from their receipts with one leg each", async () => {
    const w = await world([SELF_MATCHING]);
    const out = await w.create("payout", "1000.00");
    expect({ status: out.status, provider: out.provider }).toEqual({
      status: "pending",
      provider: SELF_MATCHING,
    });
    expect(await w.rub()).toMatchObject({ balance: "-1000.00", reserved: "1000.00" });
    expect(await w.poolPayout(out.id)).toMatchObject({ freeAmount: "1000.00", status: "open" });

    const first = await w.create("payment", "600.00");
    const second = await w.create("payment", "400.00");
    for (const pay of [first, second])
      expect({ status: pay.status, provider: pay.provider, number: pay.number, name: pay.name }).toEqual({
        status: "awaiting_confirmation",
        provider: SELF_MATCHING,
        ...PAYEE,
      });
    expect(await w.poolPayout(out.id)).toMatchObject({ freeAmount: "0.00", reservedAmount: "1000.00" });

    expect((await w.payByReceipt(first.id))?.status).toBe("completed");
    expect(await w.poolPayout(out.id)).toMatchObject({ paidAmount: "600.00", reservedAmount: "400.00" });
    expect((await w.store.findAnyById(out.id))?.status).toBe("pending");
    await w.payByReceipt(second.id);

    const done = await w.store.findAnyById(out.id);
    expect({ status: done?.status, actual: done?.actual_amount }).toEqual({
      status: "completed",
      actual: "1000.00",
    });
    const pooled = await w.poolPayout(out.id);
    expect(pooled?.status).toBe("completed");
    const legs = await w.store.legs(out.id);
    expect(legs.map((l) => [l.id, l.amount]).sort()).toEqual(
      (pooled?.contributions ?? []).map((c) => [c.id, c.amount]).sort(),
    );
    // A second delivery of a completion confirms nothing twice and adds no leg.
    const again = await w.store.findAnyById(second.id);
    if (again) await onPayinCompleted(w.pool, again);
    expect((await w.store.legs(out.id)).length).toBe(2);
  });

  it("passes a payin the pool cannot take (amount_unavailable) to the next provider, the pool's remainder untouched", async () => {
    const w = await world([SELF_MATCHING, "acme"]);
    const out = await w.create("payout", "1000.00");
    // 950.00 would leave 50.00, below the method's minimum: not admissible.
    const pay = await w.create("payment", "950.00");
    expect({ status: pay.status, provider: pay.provider, passed: pay.routing_passed }).toEqual({
      status: "pending",
      provider: "acme",
      passed: [SELF_MATCHING],
    });
    expect(await w.poolPayout(out.id)).toMatchObject({ freeAmount: "1000.00", reservedAmount: "0.00" });
  });

  it("takes matching's lost answer to an Admit for unknown, not a decline: the payin goes on, and its withdrawal at the pool frees the slot the Admit did take", async () => {
    const w = await world([SELF_MATCHING, "acme"]);
    const out = await w.create("payout", "1000.00");
    w.matching.lost.add("admit");
    const pay = await w.create("payment", "1000.00");
    w.matching.lost.delete("admit");
    expect({ status: pay.status, provider: pay.provider, passed: pay.routing_passed }).toEqual({
      status: "pending",
      provider: "acme",
      passed: [SELF_MATCHING],
    });
    // Asked at once, the withdrawal released the slot: the payout's whole remainder is free
    // again, and the payer pays acme only.
    expect(await w.store.withdrawals.asking(pay.id, SELF_MATCHING)).toBeUndefined();
    expect(await w.poolPayout(out.id)).toMatchObject({ freeAmount: "1000.00", reservedAmount: "0.00" });
    expect((await w.create("payment", "1000.00")).provider).toBe(SELF_MATCHING);
  });

  it("reserves nothing for a late copy of a payin's first Admit that reaches matching after its withdrawal", async () => {
    const w = await world([SELF_MATCHING, "acme"]);
    const out = await w.create("payout", "1000.00");
    w.matching.lost.add("admit");
    const pay = await w.create("payment", "1000.00");
    w.matching.lost.delete("admit");
    expect(pay.provider).toBe("acme");
    const first = w.admits.find((a) => a.payinId === pay.id);
    expect(first).toBeDefined();
    // The same request again, as a copy delayed in the network or a queue would arrive.
    const late = await w.matchingClient.admit(first ?? {}).then(
      (res) => res.slot?.status,
      (err: unknown) => errorInfo(err)?.code,
    );
    expect(late).toBe("slot_settled");
    expect(await w.poolPayout(out.id)).toMatchObject({ freeAmount: "1000.00", reservedAmount: "0.00" });
  });
});
