import { randomUUID } from "node:crypto";
import { createLogger } from "@gw/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";
import { DependencyUnavailableError } from "./lifecycle/errors.ts";
import { reserveBeforeRouting } from "./payout-reserve.ts";

// A payout's reserve is posted before any provider is asked: a create still unresolved at
// the end of its budget (503) keeps it, a refusal releases it exactly once (durably, by
// the refusal's own event), and a retry of that refusal reserves again. Real ledger and
// sandbox services.

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({ budgetMs: 3_000, attemptTimeoutMs: 1_000 });
});
afterAll(() => h?.stop());

const payout = (s: { shopId: string; merchantId: string }, amount: string, mop = `out-${randomUUID()}`) =>
  h.operations.createOperation({
    scope: s,
    type: "payout",
    merchantOperationId: mop,
    clientId: "payee",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
    number: "2200111122223333",
    name: "Payee",
  });

const balance = async (shopId: string) => {
  const { balances } = await h.ledger.getBalances({ shopId });
  return balances.find((b) => b.currency === "RUB");
};

const transfers = async (operationId: string) =>
  (
    await h.sql<{ kind: string }[]>`
      select kind from ledger.transfers where operation_id = ${operationId} order by created_at, key`
  ).map((t) => t.kind);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a payout's reserve is posted before any provider is asked", () => {
  it("is held when the create answers 503 with the provider's answer unresolved", async () => {
    const name = `silent-${randomUUID().slice(0, 8)}`;
    // Takes the payout without answering, and its status service is always down.
    await h.provider(
      name,
      { mode: "accept" },
      {
        mode: "accept",
        faults: { seed: name, create: { never_answer: 1 }, status_down: { every_ms: 1_000, for_ms: 1_000 } },
      },
    );
    const merchant = await h.shop([name]);
    const err = await failureOf(payout(merchant, "300.00"));
    expect(err.info?.code).toBe("dependency_unavailable");
    expect(await balance(merchant.shopId)).toMatchObject({ balance: "-300.00", reserved: "300.00" });
  });

  it("is released exactly once when no provider accepts, and posted again when a retry of that refusal is accepted", async () => {
    const name = `fickle-${randomUUID().slice(0, 8)}`;
    await h.provider(name, { mode: "accept" }, { mode: "decline" });
    const merchant = await h.shop([name]);
    const mop = `out-${randomUUID()}`;
    const refused = await failureOf(payout(merchant, "250.00", mop));
    expect(refused.info?.code).toBe("no_provider_accepted");
    const id = (await h.store.findByMop(merchant.shopId, mop))?.id ?? "";
    await eventually(
      () => transfers(id),
      (t) => expect(t).toEqual(["payout_reserve", "payout_release"]),
    );
    expect(await balance(merchant.shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });

    // The retry routes again under the same id, now to a provider that takes it (the one
    // that declined declines the same reference again).
    const taker = `taker-${randomUUID().slice(0, 8)}`;
    await h.provider(taker, { mode: "accept" }, { mode: "accept" });
    for (const method of ["WT_RUB_C2C", "WT_RUB_PHONE"])
      await h.operations.putRoute({
        shopId: merchant.shopId,
        method,
        payin: [taker],
        payout: [taker],
        settlementCurrency: "RUB",
      });
    const retried = await payout(merchant, "250.00", mop);
    expect(retried.operation?.status).toBe("pending");
    expect(await balance(merchant.shopId)).toMatchObject({ balance: "-250.00", reserved: "250.00" });
    await pause(500);
    expect(await transfers(id)).toEqual(["payout_reserve", "payout_release", "payout_reserve"]);
    const [reserves] = await h.sql<{ n: number }[]>`
      select count(*)::int as n from ledger.payout_reserves where operation_id = ${id}`;
    expect(reserves?.n).toBe(1);
  });
});

describe("a stale driver's reserve", () => {
  it("stops its routing when the ledger released the reserve at a newer version: no provider may be asked without one", async () => {
    const name = `refuser-${randomUUID().slice(0, 8)}`;
    await h.provider(name, { mode: "accept" }, { mode: "decline" });
    const merchant = await h.shop([name]);
    const mop = `out-${randomUUID()}`;
    expect((await failureOf(payout(merchant, "275.00", mop))).info?.code).toBe("no_provider_accepted");
    const refused = await h.store.findByMop(merchant.shopId, mop);
    if (!refused) throw new Error("no refused payout");
    await eventually(
      () => transfers(refused.id),
      (t) => expect(t).toEqual(["payout_reserve", "payout_release"]),
    );
    // A driver that routed the payout before that refusal (an older version), paused,
    // now reserving late: the ledger posts nothing, and the driver must not go on.
    const stale = { ...refused, status: "routing" as const, version: String(BigInt(refused.version) - 1n) };
    const deps = {
      ledger: h.ledger,
      attemptTimeoutMs: 1_000,
      logger: createLogger("operations-test", "silent"),
    };
    const outcome = await reserveBeforeRouting(deps, stale, AbortSignal.timeout(5_000)).then(
      () => "went on",
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(DependencyUnavailableError);
    expect(await transfers(refused.id)).toEqual(["payout_reserve", "payout_release"]);
    expect(await balance(merchant.shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });
    // The driver that reserves under the current routing's version is confirmed.
    await reserveBeforeRouting(
      deps,
      { ...stale, version: String(BigInt(refused.version) + 1n) },
      AbortSignal.timeout(5_000),
    );
    expect(await balance(merchant.shopId)).toMatchObject({ balance: "-275.00", reserved: "275.00" });
  });
});
