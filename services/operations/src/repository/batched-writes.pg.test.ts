import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimRow, inserted } from "../../test/contracts/store.contract.ts";
import type { OperationRow } from "../domain/model.ts";
import { PgOperationStore } from "./operations.ts";
import type { ClaimRow } from "./store.ts";

// Concurrent creates of one replica share one statement and one commit for their claims
// and one for their outcomes (`GroupCommit`); what only a real Postgres shows is checked
// here: each caller gets its own row, its own conflict or its own error.

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 4 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

/** A store on connections of its own whose statements from now on are listed. */
async function countingStore() {
  const statements: string[] = [];
  const conn = connect(database.url, { max: 4, onStatement: (q) => statements.push(q.trim()) });
  await conn.sql`select 1`;
  statements.length = 0;
  const prefix = `b${randomUUID().slice(0, 8)}`;
  // No stall: what shares a statement depends only on what was queued, not on the machine's speed.
  const store = new PgOperationStore(conn.sql, prefix, { stallMs: 600_000 });
  return { store, prefix, statements, end: () => conn.sql.end() };
}

async function configVersion(): Promise<string> {
  const [row] = await sql<{ v: string }[]>`select version::text as v from operations.config_version`;
  return row?.v ?? "";
}

const claimOptions = async (over: Partial<{ forLink: boolean; configVersion: string | null }> = {}) => ({
  budgetMs: 60_000,
  forLink: false,
  configVersion: await configVersion(),
  ...over,
});

async function holdKeyForLink(row: ClaimRow) {
  await sql`
    insert into operations.flexible_links (operation_id, shop_id, merchant_id, merchant_operation_id,
      request_hash, client_id, method, currency, recommended_amount, picker, k_hash, status, expires_at)
    values (${randomUUID()}, ${row.shop_id}, ${row.merchant_id}, ${row.merchant_operation_id}, 'link body',
      'client', 'WT_RUB_C2C', 'RUB', '100.00', 'payer', 'k', 'amount_selection', now() + interval '1 hour')`;
}

describe("claims in batches", () => {
  it("claims concurrent creates' keys in one statement after the first, each answered with its own row", async () => {
    const { store, statements, end } = await countingStore();
    try {
      const options = await claimOptions();
      const rows = Array.from({ length: 20 }, () => claimRow());
      const outcomes = await Promise.all(rows.map((r) => store.claim(r, options)));
      // The first finds nothing in flight and goes alone; the 19 that came while it ran go together.
      expect(statements.filter((q) => /insert into operations\.operations/.test(q))).toHaveLength(2);
      for (const [i, o] of outcomes.entries()) {
        expect(o.claimed).toMatchObject({ id: rows[i]?.id, status: "routing", version: "0" });
        expect(o.existing).toBeUndefined();
      }
      const [n] = await sql<{ n: number }[]>`
        select count(*)::int as n from operations.operations where id = any(${rows.map((r) => r.id)}::uuid[])`;
      expect(n?.n).toBe(20);
    } finally {
      await end();
    }
  });

  it("answers each claim of a batch by its own key: claimed, already there, held by a link, or stale", async () => {
    const { store, end } = await countingStore();
    try {
      const options = await claimOptions();
      const there = claimRow();
      await store.claim(there, options);
      const held = claimRow();
      await holdKeyForLink(held);
      const fresh = claimRow();
      const heldForLink = claimRow();
      await holdKeyForLink(heldForLink);
      // One claim in flight, so the next four go in one statement.
      const first = store.claim(claimRow(), options);
      const [a, b, c, d, e] = await Promise.all([
        store.claim({ ...there, id: randomUUID(), request_hash: "other body" }, options),
        store.claim(held, options),
        store.claim(fresh, options),
        store.claim(heldForLink, { ...options, forLink: true }),
        store.claim(claimRow(), { ...options, configVersion: "987654321" }),
      ]);
      await first;
      expect(a).toMatchObject({ existing: { id: there.id, request_hash: "hash" }, linkHoldsKey: false });
      expect(a.claimed).toBeUndefined();
      expect(b).toEqual({ linkHoldsKey: true, configStale: false });
      expect(c.claimed?.id).toBe(fresh.id);
      expect(d).toMatchObject({ claimed: { id: heldForLink.id }, linkHoldsKey: true });
      expect(e).toEqual({ linkHoldsKey: false, configStale: true });
    } finally {
      await end();
    }
  });

  it("gives two concurrent claims of one key one row: one claims it, the other finds it", async () => {
    const { store, statements, end } = await countingStore();
    try {
      const options = await claimOptions();
      const row = claimRow();
      const outcomes = await Promise.all([
        store.claim(claimRow(), options),
        store.claim(row, options),
        store.claim({ ...row, request_hash: "again" }, options),
      ]);
      // The same key never shares a statement: the second waits for the next one and sees the first's row.
      expect(statements.filter((q) => /insert into operations\.operations/.test(q))).toHaveLength(3);
      expect(outcomes[1]?.claimed?.id).toBe(row.id);
      expect(outcomes[2]?.existing).toMatchObject({ id: row.id, request_hash: "hash" });
      expect(outcomes[2]?.claimed).toBeUndefined();
    } finally {
      await end();
    }
  });

  it("fails only the claim whose row the table refuses; the others of its batch are claimed", async () => {
    const { store, end } = await countingStore();
    try {
      const options = await claimOptions();
      const first = store.claim(claimRow(), options);
      const good = [claimRow(), claimRow()];
      const results = await Promise.allSettled([
        store.claim(good[0] as ClaimRow, options),
        store.claim(claimRow({ expected_amount: "-5.00" }), options),
        store.claim(good[1] as ClaimRow, options),
      ]);
      await first;
      expect(results[0]).toMatchObject({ status: "fulfilled", value: { claimed: { id: good[0]?.id } } });
      expect(results[1]).toMatchObject({
        status: "rejected",
        reason: { constraint_name: "operations_amounts" },
      });
      expect(results[2]).toMatchObject({ status: "fulfilled", value: { claimed: { id: good[1]?.id } } });
    } finally {
      await end();
    }
  });

  it("claims a fresh key of a batch without waiting on another key's row another transaction is updating", async () => {
    const { store, end } = await countingStore();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    try {
      const options = await claimOptions();
      const there = claimRow();
      await store.claim(there, options);
      const { promise: locked, resolve: isLocked } = Promise.withResolvers<void>();
      const holder = sql.begin(async (tx) => {
        // An update in progress (a lock alone would not make an insert of the key wait).
        await tx`update operations.operations set updated_at = now() where id = ${there.id}`;
        isLocked();
        await released;
      });
      await locked;
      const first = store.claim(claimRow(), options);
      const fresh = claimRow();
      const replay = store.claim(there, options);
      // Resolves while the lock is held: a claim that waited on it would never be answered here.
      expect((await store.claim(fresh, options)).claimed?.id).toBe(fresh.id);
      expect((await replay).existing?.id).toBe(there.id);
      await first;
      release();
      await holder;
    } finally {
      release();
      await end();
    }
  });

  it("refuses a claim with an undefined column instead of writing a null for it", async () => {
    const { store, end } = await countingStore();
    try {
      await expect(store.claim(claimRow({ name: undefined as never }), await claimOptions())).rejects.toThrow(
        "column name is undefined",
      );
    } finally {
      await end();
    }
  });

  it("never puts two claims of one key in one statement, whatever ids they carry", async () => {
    const { store, end } = await countingStore();
    try {
      const options = await claimOptions();
      const row = claimRow();
      const first = store.claim(claimRow(), options);
      const [a, b] = await Promise.all([
        store.claim(row, options),
        store.claim({ ...row, id: randomUUID(), request_hash: "another body" }, options),
      ]);
      await first;
      expect(a.claimed?.id).toBe(row.id);
      expect(b.claimed).toBeUndefined();
      expect(b.existing).toMatchObject({ id: row.id, request_hash: "hash" });
    } finally {
      await end();
    }
  });
});

describe("outcomes in batches", () => {
  const accept = (store: PgOperationStore, row: OperationRow) =>
    store.applyFact(
      row,
      { kind: "provider_accepted", provider: "a", receiptRequired: false },
      { data: { routing_deadline: null, number: `2200${row.id.slice(0, 4)}`, expires_at: null } },
    );

  it("records concurrent acceptances in one statement after the first, each with its own event", async () => {
    const { store, prefix, statements, end } = await countingStore();
    try {
      const rows = await Promise.all(Array.from({ length: 12 }, () => inserted(store)));
      statements.length = 0;
      const results = await Promise.all(rows.map((r) => accept(store, r)));
      expect(statements.filter((q) => /update operations\.operations/.test(q))).toHaveLength(2);
      for (const [i, { row }] of results.entries())
        expect(row).toMatchObject({ id: rows[i]?.id, status: "pending", version: "1", provider: "a" });
      const written = await sql<{ id: string; status: string; number: string; version: string }[]>`
        select id, status, number, version::text from operations.operations where id = any(${rows.map((r) => r.id)}::uuid[])`;
      expect(written).toHaveLength(12);
      for (const w of written)
        expect(w).toMatchObject({ status: "pending", number: `2200${w.id.slice(0, 4)}`, version: "1" });
      const events = await sql<{ n: number }[]>`
        select count(*)::int as n from operations.outbox where subject = ${`${prefix}.operations.payment.pending`}`;
      expect(events[0]?.n).toBe(12);
    } finally {
      await end();
    }
  });

  it("writes nothing and queues no event for a row whose version moved on, and writes the rest of its batch", async () => {
    const { store, prefix, end } = await countingStore();
    try {
      const rows = await Promise.all(Array.from({ length: 4 }, () => inserted(store)));
      const stale = rows[2] as OperationRow;
      await sql`update operations.operations set version = version + 1 where id = ${stale.id}`;
      const first = accept(store, await inserted(store));
      const results = await Promise.all(rows.map((r) => accept(store, r)));
      await first;
      expect(results.map((r) => r.row?.status)).toEqual(["pending", "pending", undefined, "pending"]);
      const [still] = await sql<
        { status: string }[]
      >`select status from operations.operations where id = ${stale.id}`;
      expect(still?.status).toBe("routing");
      const events = await sql<{ n: number }[]>`
        select count(*)::int as n from operations.outbox where subject = ${`${prefix}.operations.payment.pending`}`;
      expect(events[0]?.n).toBe(4);
    } finally {
      await end();
    }
  });

  it("writes the rows of a batch that nobody holds without waiting on one another transaction holds, which follows alone", async () => {
    const { store, end } = await countingStore();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    try {
      const held = await inserted(store);
      const free = await inserted(store);
      const { promise: locked, resolve: isLocked } = Promise.withResolvers<void>();
      const holder = sql.begin(async (tx) => {
        await tx`select 1 from operations.operations where id = ${held.id} for update`;
        isLocked();
        await released;
      });
      await locked;
      const first = accept(store, await inserted(store));
      const heldWrite = accept(store, held);
      // Answered while the other row is held: a batch that waited on it would never answer here.
      expect((await accept(store, free)).row?.status).toBe("pending");
      await first;
      release();
      await holder;
      expect((await heldWrite).row?.status).toBe("pending");
    } finally {
      release();
      await end();
    }
  });
});

describe("batched statements on a table the planner has no statistics of", () => {
  it("find their rows through the indexes, not by scanning the table", async () => {
    // A table filled since its last analyze (as after a burst of creates): the planner
    // takes it for small, and a join with a batch would read it whole.
    await sql`
      insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash, type,
        status, expected_amount, currency)
      select gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'bulk-' || g, 'h', 'payment', 'pending', 1000, 'RUB'
      from generate_series(1, 5000) g`;
    const conn = connect(database.url, { max: 1 });
    try {
      const store = new PgOperationStore(conn.sql, "scan");
      const scans = async () => {
        await conn.sql`select pg_stat_force_next_flush()`;
        const [row] = await sql<{ n: string }[]>`
          select seq_scan::text as n from pg_stat_user_tables where schemaname = 'operations' and relname = 'operations'`;
        return Number(row?.n);
      };
      const rows = await Promise.all(Array.from({ length: 4 }, () => inserted(store)));
      const options = await claimOptions();
      const before = await scans();
      const claims = [
        store.claim(claimRow(), options),
        store.claim(claimRow(), options),
        store.claim(claimRow(), options),
      ];
      const writes = rows.map((r) =>
        store.applyFact(r, { kind: "provider_accepted", provider: "a", receiptRequired: false }),
      );
      await Promise.all([...claims, ...writes]);
      expect(await scans()).toBe(before);
    } finally {
      await conn.sql.end();
    }
  });
});
