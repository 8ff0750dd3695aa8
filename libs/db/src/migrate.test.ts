import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { connect } from "./connect.ts";
import { migrateSchema } from "./migrate.ts";
import { createTestDatabase, type TestDatabase } from "./test-database.ts";

const folder = (schema: string) =>
  fileURLToPath(new URL(`../test-fixtures/migrations-${schema}`, import.meta.url));

const databases: TestDatabase[] = [];
const pools: ReturnType<typeof connect>[] = [];

/** A fresh database and `n` separate pools on it, as `n` replicas starting at once would have. */
async function replicas(n: number) {
  const testDb = await createTestDatabase();
  databases.push(testDb);
  const opened = Array.from({ length: n }, () => connect(testDb.url, { max: 2 }));
  pools.push(...opened);
  return opened;
}

afterAll(async () => {
  for (const p of pools) await p.sql.end({ timeout: 5 });
  for (const d of databases) await d.drop();
});

describe("migrateSchema", () => {
  it("applies each migration once when three replicas migrate the same schema at once", async () => {
    const [a, b, c] = await replicas(3);
    if (!a || !b || !c) throw new Error("pools missing");

    await Promise.all([a, b, c].map((r) => migrateSchema(r.sql, r.db, "alpha", folder("alpha"))));

    const applied = await a.sql`select tag from alpha.applied_migrations order by at`;
    expect(applied.map((r) => r.tag)).toEqual(["0000_init", "0001_more"]);
    const journal = await a.sql`select created_at from drizzle.alpha_migrations order by id`;
    expect(journal.map((r) => String(r.created_at))).toEqual(["1795000000000", "1795000001000"]);
  });

  it("finds nothing to do when the schema is already migrated", async () => {
    const [a] = await replicas(1);
    if (!a) throw new Error("pool missing");
    await migrateSchema(a.sql, a.db, "alpha", folder("alpha"));

    await migrateSchema(a.sql, a.db, "alpha", folder("alpha"));

    expect(await a.sql`select count(*)::int as n from alpha.applied_migrations`).toEqual([{ n: 2 }]);
  });

  it("lets two services migrate their own schemas at once on a fresh database", async () => {
    // Both migrators create the shared `drizzle` schema for their journals; on a fresh
    // database they must not trip over each other doing it. The race is narrow, so it
    // runs several rounds on warm connections, starting each from an empty database.
    const [a, b] = await replicas(2);
    if (!a || !b) throw new Error("pools missing");
    for (let round = 0; round < 10; round++) {
      await a.sql.unsafe("drop schema if exists drizzle, alpha, beta cascade");
      await Promise.all([a.sql`select 1`, b.sql`select 1`]);

      await Promise.all([
        migrateSchema(a.sql, a.db, "alpha", folder("alpha")),
        migrateSchema(b.sql, b.db, "beta", folder("beta")),
      ]);

      expect(await a.sql`select count(*)::int as n from alpha.applied_migrations`).toEqual([{ n: 2 }]);
      expect(await a.sql`select count(*)::int as n from beta.applied_migrations`).toEqual([{ n: 2 }]);
    }
  });
});
