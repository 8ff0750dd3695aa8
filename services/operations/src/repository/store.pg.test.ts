import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { eventually } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimRow, describeOperationStore, inserted } from "../../test/contracts/store.contract.ts";
import type { OperationRow } from "../domain/model.ts";
import { forceTransition } from "./force-transition.ts";
import { PgOperationStore } from "./operations.ts";

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;
let store: PgOperationStore;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 4 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
  store = new PgOperationStore(sql, `t${randomUUID().slice(0, 8)}`);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

describeOperationStore("the Postgres store", async () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  return {
    store: new PgOperationStore(sql, prefix),
    events: async () =>
      (
        await sql<{ subject: string }[]>`
          select subject from operations.outbox where subject like ${`${prefix}.%`} order by id`
      ).map((r) => r.subject),
    holdKeyForLink: async (row) => {
      await sql`
        insert into operations.flexible_links (operation_id, shop_id, merchant_id, merchant_operation_id,
          request_hash, client_id, method, currency, recommended_amount, picker, k_hash, status, expires_at)
        values (${row.id}, ${row.shop_id}, ${row.merchant_id}, ${row.merchant_operation_id}, 'link body',
          'client', 'WT_RUB_C2C', 'RUB', '100.00', 'payer', 'k', 'amount_selection', now() + interval '1 hour')`;
    },
  };
});

async function pendingPayment(): Promise<OperationRow> {
  const row = await inserted(store);
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
  return { store: new PgOperationStore(conn.sql, "counted"), statements, end: () => conn.sql.end() };
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

/**
 * What only Postgres shows: how many statements a write takes, the database's clock, and
 * the configuration version's trigger and locks. The rest is the contract above.
 */
describe("the Postgres store", () => {
  it("records a provider's acceptance in one statement, with its event and no transaction around it", async () => {
    const { store: counted, statements, end } = await countingStore();
    try {
      const row = await inserted(store);
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
});
