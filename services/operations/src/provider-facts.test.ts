import { randomUUID } from "node:crypto";
import { createLogger } from "@gw/log";
import { Decimal } from "@gw/money";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type OperationsHarness, startHarness } from "../test/harness.ts";
import {
  listProviderFacts,
  openProviderFacts,
  ProviderFactAlreadyResolvedError,
  ProviderFactNotCreditableError,
  recordProviderFact,
  resolveProviderFact,
} from "./provider-facts.ts";
import { applyProviderResult } from "./provider-results.ts";

let h: OperationsHarness;
const logger = createLogger("operations-test", "silent");

beforeAll(async () => {
  h = await startHarness({
    config: {
      WITHDRAW_INTERVAL_MS: "100",
      WITHDRAW_BACKOFF_MS: "50",
      WITHDRAW_ATTEMPTS: "3",
      RECONCILE_INTERVAL_MS: "0",
    },
  });
  await h.provider("withdraws", { mode: "accept" });
  await h.provider("keeps", { mode: "accept", withdraw: "unsupported" });
  await h.provider("failing", { mode: "accept", withdraw: "failing" });
}, 60_000);
afterAll(() => h?.stop());

type Shop = { shopId: string; merchantId: string };

async function createPending(shop: Shop, amount = "1000.00"): Promise<string> {
  const { operation } = await h.operations.createOperation({
    scope: shop,
    type: "payment",
    merchantOperationId: `mop-${randomUUID()}`,
    clientId: "client-1",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
  });
  expect(operation?.status).toBe("pending");
  return operation?.operationId ?? "";
}

const cancel = (shop: Shop, id: string) =>
  h.operations.cancelOperation({ scope: shop, id: { case: "operationId", value: id }, reason: "" });

const factsOf = async (operationId: string) =>
  (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.operationId === operationId);

/** The subjects of the outbox rows about provider facts, in commit order. */
async function factEvents(): Promise<string[]> {
  const rows = await h.sql<{ subject: string }[]>`
    select subject from operations.outbox where subject like '%.provider_facts.%' order by seq`;
  return rows.map((r) => r.subject.slice(r.subject.indexOf(".provider_facts.") + 1));
}

const deps = () => ({ store: h.store, logger });
/** What `applyProviderResult` needs, as the callback handler passes it. */
const apply = () => ({ store: h.store, logger });

describe("provider facts", () => {
  it("records a completion that the withdrawal found, once, though the callback reports it again", async () => {
    const shop = await h.shop(["withdraws"], { percent: "2.5", fixed: "0" });
    const id = await createPending(shop);
    // The payer pays before the cancel reaches the provider; its callback is refused for now.
    h.callbacks("refuse");
    expect((await h.settle(id, { legs: ["1000.00"] })).status).toBe(200);
    expect((await cancel(shop, id)).outcome).toBe("cancelled");

    const [fact] = await eventually(
      () => factsOf(id),
      (list) => expect(list).toHaveLength(1),
    );
    expect(fact).toMatchObject({
      kind: "late_completion",
      provider: "withdraws",
      amount: "1000.00",
      currency: "RUB",
      direction: "payin",
      status: "open",
      shopId: shop.shopId,
    });
    h.callbacks("forward");
    await eventually(
      () => h.sql`select 1 from operations.callbacks where operation_id = ${id}`,
      (rows) => expect(rows).toHaveLength(1),
    );
    expect(await factsOf(id)).toHaveLength(1);
    const row = await h.store.findAnyById(id);
    expect(row?.status).toBe("cancelled");
    expect(row?.actual_amount).toBe("0.00");
  });

  it("gives a withdrawal up after repeated failures, leaving the payment cancelled, and records a later completion", async () => {
    const shop = await h.shop(["failing"]);
    const id = await createPending(shop, "700.00");
    expect((await cancel(shop, id)).outcome).toBe("cancelled");
    const [withdrawal] = await eventually(
      () => h.sql<{ status: string; attempts: number }[]>`
        select status, attempts from operations.withdrawals where operation_id = ${id}`,
      (rows) => expect(rows[0]?.status).toBe("gave_up"),
    );
    expect(withdrawal?.attempts).toBe(3);
    h.callbacks("forward");
    expect((await h.settle(id, { legs: ["700.00"] })).status).toBe(200);
    const [fact] = await eventually(
      () => factsOf(id),
      (list) => expect(list).toHaveLength(1),
    );
    expect(fact).toMatchObject({ kind: "late_completion", provider: "failing", amount: "700.00" });
    expect((await h.store.findAnyById(id))?.status).toBe("cancelled");
  });

  it("records the same legs reported by the callback and by a status read as one fact with one event", async () => {
    const shop = await h.shop(["keeps"]);
    const id = await createPending(shop, "400.00");
    await cancel(shop, id);
    const before = (await factEvents()).length;
    const result = {
      operationId: id,
      status: "completed" as const,
      legs: [{ id: "leg-1", amount: "400.00", completedAt: new Date() }],
    };
    for (const source of ["callback", "reconciler"] as const) {
      const outcome = await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, source));
      expect(outcome).toBe("already_terminal");
    }
    expect(await factsOf(id)).toHaveLength(1);
    expect((await factEvents()).slice(before)).toEqual(["provider_facts.recorded"]);
  });

  it("records a completion from a provider that does not hold the route, and leaves the operation as it was", async () => {
    const shop = await h.shop(["withdraws"]);
    const id = await createPending(shop, "300.00");
    const result = { operationId: id, status: "completed" as const, legs: [] };
    const outcome = await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, "callback"));
    expect(outcome).toBe("not_routed");
    const [fact] = await factsOf(id);
    expect(fact).toMatchObject({ kind: "not_routed", provider: "keeps", amount: "300.00" });
    expect((await h.store.findAnyById(id))?.status).toBe("pending");
  });

  it("records legs beyond a completed operation's own as an amount that does not fit, and the same legs again as nothing", async () => {
    const shop = await h.shop(["keeps"]);
    const id = await createPending(shop, "600.00");
    const leg = (legId: string, amount: string) => ({ id: legId, amount, completedAt: new Date() });
    const report = (legs: ReturnType<typeof leg>[]) =>
      h.sql.begin((tx) =>
        applyProviderResult(apply(), tx, "keeps", { operationId: id, status: "completed", legs }, "callback"),
      );
    expect(await report([leg("a", "600.00")])).toBe("applied");
    expect(await report([leg("a", "600.00")])).toBe("already_terminal");
    expect(await factsOf(id)).toEqual([]);
    expect(await report([leg("a", "600.00"), leg("b", "150.00")])).toBe("already_terminal");
    const [fact] = await factsOf(id);
    expect(fact).toMatchObject({ kind: "amount_mismatch", amount: "150.00", status: "open" });
    const row = await h.store.findAnyById(id);
    expect(row).toMatchObject({ status: "completed", actual_amount: "600.00" });
  });

  it("records only what a report adds beyond a completion that carried no legs, once per excess", async () => {
    const shop = await h.shop(["keeps"]);
    const id = await createPending(shop, "600.00");
    const leg = (legId: string, amount: string) => ({ id: legId, amount, completedAt: new Date() });
    const report = (legs: ReturnType<typeof leg>[]) =>
      h.sql.begin((tx) =>
        applyProviderResult(apply(), tx, "keeps", { operationId: id, status: "completed", legs }, "callback"),
      );
    // Completed without legs (as a receipt's review completes one): no leg of the provider's is held.
    expect(await report([])).toBe("applied");
    expect(await report([leg("p1", "600.00")])).toBe("already_terminal");
    expect(await factsOf(id)).toEqual([]);
    expect(await report([leg("p1", "600.00"), leg("p2", "150.00")])).toBe("already_terminal");
    expect(await report([leg("p1", "600.00"), leg("p2", "150.00"), leg("p3", "50.00")])).toBe(
      "already_terminal",
    );
    expect(await report([leg("p1", "600.00"), leg("p2", "150.00")])).toBe("already_terminal");
    const facts = await factsOf(id);
    expect(facts.map((f) => f.amount).sort()).toEqual(["150.00", "50.00"]);
    expect(facts.every((f) => f.kind === "amount_mismatch")).toBe(true);
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "completed", actual_amount: "600.00" });
  });

  it("resolves a fact once: credit with the shop's commission, the same action replays, another is refused", async () => {
    const shop = await h.shop(["keeps"], { percent: "2.5", fixed: "10" });
    const id = await createPending(shop, "200.00");
    await cancel(shop, id);
    const result = { operationId: id, status: "completed" as const, legs: [] };
    await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, "callback"));
    const [fact] = await factsOf(id);
    const input = { id: fact!.id, action: "credit_shop" as const, reason: "paid late", operator: "alice" };

    const first = await resolveProviderFact(deps(), input);
    expect(first.replayed).toBe(false);
    expect(first.fact.resolution).toMatchObject({
      action: "credit_shop",
      operator: "alice",
      reason: "paid late",
      settlementAmount: "185.000000",
      commissionAmount: "15.000000",
      settlementCurrency: "RUB",
    });
    const again = await resolveProviderFact(deps(), input);
    expect(again.replayed).toBe(true);
    await expect(resolveProviderFact(deps(), { ...input, action: "return_to_payer" })).rejects.toBeInstanceOf(
      ProviderFactAlreadyResolvedError,
    );
    expect((await factEvents()).filter((e) => e === "provider_facts.resolved").length).toBeGreaterThanOrEqual(
      1,
    );
  });

  it("settles money a provider paid out by charging the shop with a payout's commission or writing it off, once", async () => {
    const shop = await h.shop(["keeps"], { percent: "2.5", fixed: "10" });
    const id = await createPending(shop, "250.00");
    const row = await h.store.findAnyById(id);
    const paidOut = (sourceKey: string) =>
      h.sql.begin((tx) =>
        recordProviderFact({ store: h.store, logger }, tx, {
          provider: "keeps",
          reference: id,
          operation: row,
          kind: "slot_refused",
          providerStatus: "completed",
          legs: [],
          amount: new Decimal("250.00"),
          sourceKey,
          direction: "payout",
        }),
      );
    await paidOut("slot:a");
    await paidOut("slot:b");
    const [charged, lost] = await factsOf(id);
    for (const action of ["credit_shop", "return_to_payer"] as const)
      await expect(
        resolveProviderFact(deps(), { id: charged!.id, action, reason: "r", operator: "o" }),
      ).rejects.toBeInstanceOf(ProviderFactNotCreditableError);
    const input = {
      id: charged!.id,
      action: "debit_shop" as const,
      reason: "its recipient got it",
      operator: "alice",
    };
    const first = await resolveProviderFact(deps(), input);
    expect(first.fact.resolution).toMatchObject({
      action: "debit_shop",
      settlementAmount: "266.250000",
      commissionAmount: "16.250000",
      settlementCurrency: "RUB",
    });
    expect((await resolveProviderFact(deps(), input)).replayed).toBe(true);
    await expect(resolveProviderFact(deps(), { ...input, action: "write_off" })).rejects.toBeInstanceOf(
      ProviderFactAlreadyResolvedError,
    );
    const written = await resolveProviderFact(deps(), { ...input, id: lost!.id, action: "write_off" });
    expect(written.fact).toMatchObject({ status: "resolved", resolution: { action: "write_off" } });
    expect(written.fact.resolution?.settlementAmount).toBeUndefined();
  });

  it("refuses to charge a shop or write off money that came in", async () => {
    const shop = await h.shop(["keeps"]);
    const id = await createPending(shop, "120.00");
    await cancel(shop, id);
    const result = { operationId: id, status: "completed" as const, legs: [] };
    await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, "callback"));
    const [fact] = await factsOf(id);
    for (const action of ["debit_shop", "write_off"] as const)
      await expect(
        resolveProviderFact(deps(), { id: fact!.id, action, reason: "r", operator: "o" }),
      ).rejects.toBeInstanceOf(ProviderFactNotCreditableError);
  });

  it("records a legless completion of an operation the gateway never had in its provider's currency, its amount unknown", async () => {
    const reference = randomUUID();
    const result = { operationId: reference, status: "completed" as const, legs: [] };
    await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, "callback"));
    const [fact] = (await listProviderFacts(h.store, { limit: 500 })).filter(
      (f) => f.provider === "keeps" && f.operationId === undefined && f.amount === "",
    );
    expect(fact).toMatchObject({ kind: "not_routed", currency: "RUB", status: "open", direction: "payin" });
    // Replayed, it is the same fact.
    await h.sql.begin((tx) => applyProviderResult(apply(), tx, "keeps", result, "callback"));
    expect((await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.id === fact!.id)).toHaveLength(
      1,
    );
    await expect(
      resolveProviderFact(deps(), { id: fact!.id, action: "credit_shop", reason: "r", operator: "o" }),
    ).rejects.toBeInstanceOf(ProviderFactNotCreditableError);
    const returned = await resolveProviderFact(deps(), {
      id: fact!.id,
      action: "return_to_payer",
      reason: "asked the provider for the amount and returned it",
      operator: "o",
    });
    expect(returned.fact.status).toBe("resolved");
  });

  it("records a completion from a provider the gateway has no configuration of without guessing its currency", async () => {
    const reference = randomUUID();
    const legs = [{ id: "g1", amount: "70.00", completedAt: new Date() }];
    await h.sql.begin((tx) =>
      applyProviderResult(
        apply(),
        tx,
        "ghost",
        { operationId: reference, status: "completed", legs },
        "callback",
      ),
    );
    const [fact] = (await listProviderFacts(h.store, { limit: 500 })).filter((f) => f.provider === "ghost");
    expect(fact).toMatchObject({ kind: "not_routed", amount: "70.00", currency: "", status: "open" });
  });

  it("counts open facts per kind in the operations_provider_facts_open gauge", async () => {
    const open = await listProviderFacts(h.store, { status: "open", limit: 500 });
    const metric = await openProviderFacts.get();
    const of = (kind: string) => metric.values.find((v) => v.labels.kind === kind)?.value;
    for (const kind of ["late_completion", "not_routed", "amount_mismatch", "slot_refused"])
      expect(of(kind)).toBe(open.filter((f) => f.kind === kind).length);
  });

  it("refuses to credit a shop with a fact of an operation the gateway never had", async () => {
    const reference = randomUUID();
    const result = { operationId: reference, status: "completed" as const, legs: [] };
    await h.sql.begin((tx) =>
      applyProviderResult(
        apply(),
        tx,
        "keeps",
        { ...result, legs: [{ id: "x", amount: "50.00", completedAt: new Date() }] },
        "callback",
      ),
    );
    const [fact] = (await listProviderFacts(h.store, { limit: 500 })).filter(
      (f) => f.provider === "keeps" && f.operationId === undefined && f.amount === "50.00",
    );
    expect(fact).toBeDefined();
    await expect(
      resolveProviderFact(deps(), { id: fact!.id, action: "credit_shop", reason: "r", operator: "o" }),
    ).rejects.toBeInstanceOf(ProviderFactNotCreditableError);
    const returned = await resolveProviderFact(deps(), {
      id: fact!.id,
      action: "return_to_payer",
      reason: "r",
      operator: "o",
    });
    expect(returned.fact.status).toBe("resolved");
  });
});
