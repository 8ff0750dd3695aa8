import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import {
  type ProviderFactEvent,
  ProviderFactEventSchema,
  ProviderFactResolutionSchema,
} from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidEventError } from "./events.ts";
import { applyProviderFactEvent } from "./suspense.ts";
import { migratedDatabase } from "./test-support.ts";

let database: Awaited<ReturnType<typeof migratedDatabase>>;
let sql: Sql;

beforeAll(async () => {
  database = await migratedDatabase();
  sql = database.sql;
});
afterAll(() => database.close());

/** A fact event as operations publishes it; `over` replaces fields of the fact. */
function factEvent(
  type: "recorded" | "resolved",
  over: Partial<NonNullable<ProviderFactEvent["fact"]>> = {},
): ProviderFactEvent {
  return create(ProviderFactEventSchema, {
    eventId: randomUUID(),
    type,
    occurredAt: new Date().toISOString(),
    fact: {
      id: randomUUID(),
      operationId: randomUUID(),
      shopId: randomUUID(),
      provider: "acme",
      kind: "late_completion",
      providerStatus: "completed",
      direction: "payin",
      amount: "1000.00",
      currency: "RUB",
      status: type === "recorded" ? "open" : "resolved",
      createdAt: new Date().toISOString(),
      ...over,
    },
  });
}

/** Every account of an owner with its balance, by kind and currency. */
async function balances(owner: string): Promise<Record<string, string>> {
  const rows = await sql<{ kind: string; currency: string; balance: string }[]>`
    select kind, currency, balance::text as balance from ledger.accounts where owner = ${owner}`;
  return Object.fromEntries(rows.map((r) => [`${r.kind}:${r.currency}`, r.balance]));
}

const apply = (event: ProviderFactEvent) => sql.begin((tx) => applyProviderFactEvent(tx, event));

describe("provider facts in the ledger", () => {
  it("books a payin fact on suspense against provider clearing, once however often it is delivered", async () => {
    const event = factEvent("recorded");
    await apply(event);
    await apply(event);
    expect(await balances(event.fact!.shopId!)).toEqual({
      "provider_clearing:RUB": "-1000.00",
      "suspense:RUB": "1000.00",
    });
  });

  it("books money a provider paid out the other way round", async () => {
    const event = factEvent("recorded", { direction: "payout", kind: "slot_refused", amount: "250.00" });
    await apply(event);
    expect(await balances(event.fact!.shopId!)).toEqual({
      "provider_clearing:RUB": "250.00",
      "suspense:RUB": "-250.00",
    });
  });

  it("moves a fact credited to the shop out of suspense into available and commission", async () => {
    const recorded = factEvent("recorded");
    await apply(recorded);
    const fact = recorded.fact!;
    const resolution = create(ProviderFactResolutionSchema, {
      action: "credit_shop",
      reason: "payer paid late",
      operator: "alice",
      resolvedAt: new Date().toISOString(),
      settlementAmount: "975.00",
      commissionAmount: "25.00",
      settlementCurrency: "RUB",
    });
    const resolved = factEvent("resolved", { ...fact, status: "resolved", resolution });
    await apply(resolved);
    await apply(resolved);
    expect(await balances(fact.shopId!)).toEqual({
      "provider_clearing:RUB": "-1000.00",
      "suspense:RUB": "0.00",
      "available:RUB": "975.00",
      "commission_revenue:RUB": "25.00",
    });
    const [transfer] = await sql<{ metadata: Record<string, string> }[]>`
      select metadata from ledger.transfers where key = ${`fact:${fact.id}:resolved`}`;
    expect(transfer?.metadata).toEqual({ operator: "alice", reason: "payer paid late" });
  });

  it("books a resolution that arrives before its recording by posting the recording first", async () => {
    const fact = factEvent("recorded").fact!;
    const resolution = create(ProviderFactResolutionSchema, {
      action: "return_to_payer",
      reason: "refund",
      operator: "bob",
    });
    await apply(factEvent("resolved", { ...fact, status: "resolved", resolution }));
    await apply(factEvent("recorded", fact));
    expect(await balances(fact.shopId!)).toEqual({
      "provider_clearing:RUB": "-1000.00",
      "suspense:RUB": "0.00",
      "payer_returns:RUB": "1000.00",
    });
  });

  it("charges the shop for money a provider paid out: suspense cleared from available, with the payout commission", async () => {
    const recorded = factEvent("recorded", { direction: "payout", kind: "slot_refused", amount: "250.00" });
    await apply(recorded);
    const fact = recorded.fact!;
    const resolution = create(ProviderFactResolutionSchema, {
      action: "debit_shop",
      reason: "the shop's recipient was paid",
      operator: "alice",
      settlementAmount: "266.25",
      commissionAmount: "16.25",
      settlementCurrency: "RUB",
    });
    const resolved = factEvent("resolved", { ...fact, status: "resolved", resolution });
    await apply(resolved);
    await apply(resolved);
    expect(await balances(fact.shopId!)).toEqual({
      "provider_clearing:RUB": "250.00",
      "suspense:RUB": "0.00",
      "available:RUB": "-266.25",
      "commission_revenue:RUB": "16.25",
    });
  });

  it("writes money a provider paid out off to the gateway's losses", async () => {
    const recorded = factEvent("recorded", { direction: "payout", kind: "not_routed", amount: "90.00" });
    const fact = recorded.fact!;
    const resolution = create(ProviderFactResolutionSchema, {
      action: "write_off",
      reason: "provider paid twice",
      operator: "bob",
    });
    await apply(factEvent("resolved", { ...fact, status: "resolved", resolution }));
    await apply(recorded);
    expect(await balances(fact.shopId!)).toEqual({
      "provider_clearing:RUB": "90.00",
      "suspense:RUB": "0.00",
      "losses:RUB": "-90.00",
    });
  });

  it("refuses to charge a shop or write off money that came in", async () => {
    const fact = factEvent("recorded").fact!;
    for (const action of ["debit_shop", "write_off"]) {
      const resolution = create(ProviderFactResolutionSchema, {
        action,
        reason: "r",
        operator: "o",
        settlementAmount: "1000.00",
        commissionAmount: "0.00",
        settlementCurrency: "RUB",
      });
      await expect(
        apply(factEvent("resolved", { ...fact, status: "resolved", resolution })),
      ).rejects.toBeInstanceOf(InvalidEventError);
    }
  });

  it("keeps a fact of an unknown operation under its provider", async () => {
    const event = factEvent("recorded", { shopId: undefined, operationId: undefined, provider: "rogue" });
    await apply(event);
    expect(await balances("provider:rogue")).toMatchObject({ "suspense:RUB": "1000.00" });
  });

  it("books nothing for a fact whose amount or currency is unknown, nor for its resolution", async () => {
    for (const over of [{ amount: "" }, { currency: "" }]) {
      const recorded = factEvent("recorded", over);
      const fact = recorded.fact!;
      await apply(recorded);
      const resolution = create(ProviderFactResolutionSchema, {
        action: "return_to_payer",
        reason: "r",
        operator: "o",
      });
      await apply(factEvent("resolved", { ...fact, status: "resolved", resolution }));
      expect(await balances(fact.shopId!)).toEqual({});
    }
  });

  it("refuses a fact without a positive amount", async () => {
    await expect(apply(factEvent("recorded", { amount: "-5.00" }))).rejects.toBeInstanceOf(InvalidEventError);
  });
});
