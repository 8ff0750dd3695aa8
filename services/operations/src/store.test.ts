import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AlreadyTerminalError,
  LegsDisagreeError,
  LifecycleViolationError,
  NotCancellableError,
} from "./domain/lifecycle/errors.ts";
import type { OperationRow } from "./domain/model.ts";
import { type ClaimRow, OperationStore } from "./repository/operations.ts";
import { eventually, forceTransition } from "./test-support.ts";

const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;
let store: OperationStore;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 3 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
  store = new OperationStore(sql, `t${randomUUID().slice(0, 8)}`);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

/** A payment just created: `routing`, with its request recorded. */
async function routingPayment(): Promise<OperationRow> {
  const row = await store.insert({
    id: randomUUID(),
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    merchant_operation_id: randomUUID(),
    request_hash: "hash",
    type: "payment",
    status: "routing",
    expected_amount: "1000.00",
    currency: "RUB",
  });
  if (!row) throw new Error("not inserted");
  return row;
}

/** A create's claim of a new key (`OperationStore.claim`), priced and not yet routed. */
function claimRow(): ClaimRow {
  return {
    id: randomUUID(),
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    merchant_operation_id: randomUUID(),
    request_hash: "hash",
    type: "payment",
    method: "WT_RUB_C2C",
    currency: "RUB",
    expected_amount: "1000.00",
    client_id: "client",
    client_ip: "10.0.0.1",
    number: null,
    name: null,
    bankname: null,
    settlement_currency: "USDT",
    fx_rate: "0.012346000000",
    fx_source: "cb",
    commission_percent: "2.5000",
    commission_fixed: "10.000000",
    pricing_version: "7",
  };
}

async function pendingPayment(): Promise<OperationRow> {
  const row = await routingPayment();
  const next = await forceTransition(store, row, { status: "pending", provider: "a" }, { emit: true });
  if (!next) throw new Error("not moved");
  return next;
}

/** A store on a connection of its own whose statements from now on are listed. */
async function countingStore() {
  const statements: string[] = [];
  const conn = connect(database.url, { max: 1, onStatement: (q) => statements.push(q.trim()) });
  await conn.sql`select 1`; // the connection's own first queries (its types) are not counted
  statements.length = 0;
  return { store: new OperationStore(conn.sql, "counted"), statements, end: () => conn.sql.end() };
}

/** The routing configuration's version now (`operations.config_version`). */
async function configVersion(): Promise<string> {
  const [row] = await sql<{ v: string }[]>`select version::text as v from operations.config_version`;
  if (!row) throw new Error("no config_version row");
  return row.v;
}

async function outboxCount(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from operations.outbox`;
  return row?.n ?? 0;
}

describe("the operations repository", () => {
  it("records a provider's acceptance in one statement, with its event and no transaction around it", async () => {
    const { store: counted, statements, end } = await countingStore();
    try {
      const row = await routingPayment();
      const before = await outboxCount();
      const { row: after } = await counted.applyFact(row, {
        kind: "provider_accepted",
        provider: "a",
        receiptRequired: false,
      });
      expect(after?.status).toBe("pending");
      expect(await outboxCount()).toBe(before + 1);
      // The acceptance decides nothing from the legs: no begin, no legs read, no commit.
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/^with upd as \(\s*update operations\.operations/);
    } finally {
      await end();
    }
  });

  it("reads the legs in the fact's transaction when its decision depends on them", async () => {
    const { store: counted, statements, end } = await countingStore();
    try {
      const row = await pendingPayment();
      const { row: after } = await counted.applyFact(row, {
        kind: "provider_completed",
        provider: "a",
        legs: [{ id: "l1", amount: "400.00" }],
      });
      expect(after).toMatchObject({ status: "completed", actual_amount: "400.00" });
      expect(statements[0]).toBe("begin");
      expect(statements.some((q) => /from operations\.legs/.test(q))).toBe(true);
      expect(statements.at(-1)).toBe("commit");
    } finally {
      await end();
    }
  });

  it("claims a new key in one statement, in routing, with its deadline by the database's clock", async () => {
    const { store: counted, statements, end } = await countingStore();
    try {
      const row = claimRow();
      // Timestamps come back as text here (libs/db), as the store's rows do before it hydrates them.
      const [read] = await sql<{ now: string }[]>`select now()::text as now`;
      const start = new Date(read?.now ?? "").getTime();
      const claim = await counted.claim(row, {
        budgetMs: 60_000,
        forLink: false,
        configVersion: await configVersion(),
      });
      expect(statements).toHaveLength(1);
      expect(claim).toMatchObject({
        claimed: { ...row, status: "routing", version: "0" },
        linkHoldsKey: false,
      });
      expect(claim.existing).toBeUndefined();
      const deadline = claim.claimed?.routing_deadline?.getTime() ?? 0;
      expect(deadline - start).toBeGreaterThanOrEqual(60_000);
      expect(deadline - start).toBeLessThan(120_000);
      expect(await store.findAnyById(row.id)).toEqual(claim.claimed);
    } finally {
      await end();
    }
  });

  it("answers the row already under the key instead of claiming it, and changes nothing", async () => {
    const first = claimRow();
    const { claimed } = await store.claim(first, {
      budgetMs: 60_000,
      forLink: false,
      configVersion: await configVersion(),
    });
    const again = {
      ...claimRow(),
      shop_id: first.shop_id,
      merchant_operation_id: first.merchant_operation_id,
    };
    const claim = await store.claim(
      { ...again, request_hash: "another body" },
      { budgetMs: 1, forLink: false, configVersion: await configVersion() },
    );
    expect(claim).toEqual({ existing: claimed, linkHoldsKey: false, configStale: false });
    expect(await store.findAnyById(first.id)).toEqual(claimed);
    expect(await store.findAnyById(again.id)).toBeUndefined();
  });

  it("claims no key a flexible link holds, but for the link's own payment", async () => {
    const row = claimRow();
    await sql`
      insert into operations.flexible_links (operation_id, shop_id, merchant_id, merchant_operation_id,
        request_hash, client_id, method, currency, recommended_amount, picker, k_hash, status, expires_at)
      values (${row.id}, ${row.shop_id}, ${row.merchant_id}, ${row.merchant_operation_id}, 'link body',
        'client', 'WT_RUB_C2C', 'RUB', '100.00', 'payer', 'k', 'amount_selection', now() + interval '1 hour')`;
    expect(
      await store.claim(row, { budgetMs: 60_000, forLink: false, configVersion: await configVersion() }),
    ).toEqual({
      linkHoldsKey: true,
      configStale: false,
    });
    expect(await store.findAnyById(row.id)).toBeUndefined();
    const own = await store.claim(row, {
      budgetMs: 60_000,
      forLink: true,
      configVersion: await configVersion(),
    });
    expect(own).toMatchObject({ claimed: { id: row.id, status: "routing" }, linkHoldsKey: true });
  });

  it("claims no key once the routing configuration has moved past the version its route was read at, whoever wrote it", async () => {
    const row = claimRow();
    const readAt = await configVersion();
    // A write by hand, outside the admin API: the trigger raises the version all the same.
    await sql`
      insert into operations.routes (shop_id, method, payin, payout, settlement_currency)
      values (${row.shop_id}, 'WT_RUB_C2C', ${["acme"]}, ${[]}, 'RUB')`;
    expect(BigInt(await configVersion())).toBe(BigInt(readAt) + 1n);
    expect(await store.claim(row, { budgetMs: 60_000, forLink: false, configVersion: readAt })).toEqual({
      linkHoldsKey: false,
      configStale: true,
    });
    expect(await store.findAnyById(row.id)).toBeUndefined();
    await sql`update operations.providers set updated_at = now() where false`;
    expect(BigInt(await configVersion())).toBe(BigInt(readAt) + 2n);
    const current = await store.routeWithProviders(row.shop_id, "WT_RUB_C2C", "payin");
    expect(current?.configVersion).toBe(await configVersion());
    const claim = await store.claim(row, {
      budgetMs: 60_000,
      forLink: false,
      configVersion: current?.configVersion ?? "",
    });
    expect(claim).toMatchObject({ claimed: { id: row.id, status: "routing" }, configStale: false });
  });

  it("claims no key while the configuration's version row is missing, and the next write brings it back at a version no route was read at", async () => {
    const row = claimRow();
    await sql`
      insert into operations.routes (shop_id, method, payin, payout, settlement_currency)
      values (${row.shop_id}, 'WT_RUB_C2C', ${["acme"]}, ${[]}, 'RUB')`;
    const readAt = await configVersion();
    await sql`delete from operations.config_version`;
    try {
      // A route read now has no version; a route read before names one that is gone.
      expect((await store.routeWithProviders(row.shop_id, "WT_RUB_C2C", "payin"))?.configVersion).toBeNull();
      for (const version of [readAt, null])
        expect(await store.claim(row, { budgetMs: 60_000, forLink: false, configVersion: version })).toEqual({
          linkHoldsKey: false,
          configStale: true,
        });
      expect(await store.findAnyById(row.id)).toBeUndefined();
    } finally {
      await sql`update operations.routes set updated_at = now() where false`;
    }
    const back = await configVersion();
    expect(BigInt(back)).toBeGreaterThan(BigInt(readAt) + 1000n);
  });

  it("lets a transaction that writes two routes and an admin write of one of them both commit, never deadlocking", async () => {
    const [first, second] = [randomUUID(), randomUUID()];
    const route = (shop: string) => sql`
      insert into operations.routes (shop_id, method, payin, payout, settlement_currency)
      values (${shop}, 'WT_RUB_C2C', ${["acme"]}, ${[]}, 'RUB')`;
    await route(first);
    await route(second);
    const readAt = BigInt(await configVersion());
    const { promise: firstWritten, resolve: wroteFirst } = Promise.withResolvers<void>();
    const batch = sql.begin(async (tx) => {
      await tx`update operations.routes set payin = ${["beta"]} where shop_id = ${first}`;
      wroteFirst();
      // The admin write of the second route waits for this transaction before it locks its row.
      await eventually(
        () => sql`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()
                  and query ~ 'set payin'`,
        (rows) => expect(rows).toHaveLength(1),
      );
      await tx`update operations.routes set payin = ${["beta"]} where shop_id = ${second}`;
    });
    await firstWritten;
    // Sent now (postgres.js sends a query once it is awaited or executed).
    const admin = sql`update operations.routes set payin = ${["gamma"]} where shop_id = ${second}`.execute();
    // Both commit: with the version row locked after the route rows, one was a deadlock victim.
    await Promise.all([batch, admin]);
    expect(BigInt(await configVersion())).toBe(readAt + 3n);
    expect((await store.routeWithProviders(second, "WT_RUB_C2C", "payin"))?.names).toEqual(["gamma"]);
  });

  it("refuses to move a pending payment straight to manual_check, and writes nothing", async () => {
    const row = await pendingPayment();
    await expect(
      forceTransition(store, row, { status: "manual_check" }, { emit: true }),
    ).rejects.toBeInstanceOf(LifecycleViolationError);
    expect((await store.findAnyById(row.id))?.status).toBe("pending");
  });

  it("refuses to reject a pending payment without its event", async () => {
    const row = await pendingPayment();
    await expect(forceTransition(store, row, { status: "rejected" }, { emit: false })).rejects.toBeInstanceOf(
      LifecycleViolationError,
    );
    expect((await store.findAnyById(row.id))?.status).toBe("pending");
  });

  it("refuses to complete an operation for less than its recorded legs", async () => {
    const row = await pendingPayment();
    await sql`
      insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at)
      values (${randomUUID()}, ${row.id}, 'a', 'leg-1', '600.00', now())`;
    await expect(
      forceTransition(store, row, { status: "completed", actual_amount: "500.00" }, { emit: true }),
    ).rejects.toBeInstanceOf(LegsDisagreeError);
    expect(
      (await forceTransition(store, row, { status: "completed", actual_amount: "600.00" }, { emit: true }))
        ?.status,
    ).toBe("completed");
  });

  it("refuses any write to a completed operation", async () => {
    const row = await pendingPayment();
    const done = await forceTransition(
      store,
      row,
      { status: "completed", actual_amount: "1000.00" },
      { emit: true },
    );
    if (!done) throw new Error("not completed");
    await expect(forceTransition(store, done, { status: "rejected" }, { emit: true })).rejects.toBeInstanceOf(
      LifecycleViolationError,
    );
    await expect(
      forceTransition(store, done, { actual_amount: "5.00" }, { emit: false }),
    ).rejects.toBeInstanceOf(LifecycleViolationError);
  });

  it("reopens only a refused create", async () => {
    const row = await pendingPayment();
    await expect(store.reopen(row, {})).rejects.toBeInstanceOf(LifecycleViolationError);
    const refused = await forceTransition(
      store,
      await routingPayment(),
      { status: "rejected" },
      { emit: false },
    );
    if (!refused) throw new Error("not refused");
    expect((await store.reopen(refused, {}))?.status).toBe("routing");
  });

  it("applies a cancel fact to a pending payment with its event, and refuses it once terminal", async () => {
    const row = await pendingPayment();
    const before = await outboxCount();
    const { row: cancelled, applied } = await store.applyFact(row, {
      kind: "cancel",
      reason: "shop said so",
    });
    expect(cancelled).toMatchObject({
      status: "cancelled",
      cancelled_by_command: true,
      cancel_reason: "shop said so",
    });
    expect(applied.events).toEqual(["payment.cancelled"]);
    expect(await outboxCount()).toBe(before + 1);
    if (!cancelled) throw new Error("not cancelled");
    await expect(store.applyFact(cancelled, { kind: "expired" })).rejects.toBeInstanceOf(
      AlreadyTerminalError,
    );
  });

  it("records a receipt verdict's leg and completes with the legs' sum and the receipts in its event", async () => {
    const routed = await routingPayment();
    const awaiting = await forceTransition(
      store,
      routed,
      { status: "awaiting_confirmation", provider: "a", receipt_required: true },
      { emit: true },
    );
    if (!awaiting) throw new Error("not awaiting");
    const receiptId = randomUUID();
    const { row } = await store.applyFact(awaiting, {
      kind: "receipt_reviewed",
      verdict: "completed",
      receiptId,
      amount: "950.00",
    });
    expect(row).toMatchObject({ status: "completed", actual_amount: "950.00" });
    const legs = await store.legs(awaiting.id);
    expect(legs).toHaveLength(1);
    expect(legs[0]).toMatchObject({ amount: "950.00", receipt_id: receiptId });
  });

  it("refuses to cancel a payment in manual_check", async () => {
    const routed = await routingPayment();
    const awaiting = await forceTransition(
      store,
      routed,
      { status: "awaiting_confirmation", provider: "a" },
      { emit: true },
    );
    if (!awaiting) throw new Error("not awaiting");
    const check = await forceTransition(store, awaiting, { status: "manual_check" }, { emit: true });
    if (!check) throw new Error("not in manual_check");
    await expect(store.applyFact(check, { kind: "cancel", reason: "x" })).rejects.toBeInstanceOf(
      NotCancellableError,
    );
  });
});
