import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "./connect.ts";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.ts";
import { migrateSchema } from "./migrate.ts";
import { createTestDatabase, type TestDatabase } from "./test-database.ts";
import {
  DatabaseUnavailableError,
  isDatabaseUnavailable,
  type WaitPolicy,
  whenDatabaseAvailable,
} from "./wait.ts";

const alpha = fileURLToPath(new URL("../test-fixtures/migrations-alpha", import.meta.url));

/** Short pauses: what is tested is how often it asks and what it logs, not how long it waits. */
const quick: WaitPolicy = { attempts: 100, firstDelayMs: 5, maxDelayMs: 20 };

/** A logger that keeps what was logged. */
function recorder() {
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    warnings,
    warn: (fields: object, message: string) => warnings.push({ fields: { ...fields }, message }),
  };
}

let testDb: TestDatabase;
let proxy: FaultProxy;
const pools: ReturnType<typeof connect>[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  proxy = await startFaultProxy(testDb.url);
});

afterAll(async () => {
  for (const p of pools) await p.sql.end({ timeout: 5 });
  await proxy?.close();
  await testDb?.drop();
});

describe("migrateSchema on a database that is not there yet", () => {
  it("waits while the server is recovering (57P03), logging each wait, and migrates once it takes connections", async () => {
    const pool = connect(proxy.url, { max: 2 });
    pools.push(pool);
    const log = recorder();
    proxy.setMode("recovering");

    const migrated = migrateSchema(pool.sql, pool.db, "alpha", alpha, { logger: log, wait: quick });
    await proxy.turnedAway(3);
    proxy.setMode("pass");
    await migrated;

    const applied = await pool.sql`select tag from alpha.applied_migrations order by at`;
    expect(applied.map((r) => r.tag)).toEqual(["0000_init", "0001_more"]);
    expect(log.warnings.length).toBeGreaterThanOrEqual(3);
    for (const [i, w] of log.warnings.entries()) {
      expect(w.fields).toMatchObject({ code: "57P03", attempt: i + 1, attempts: quick.attempts });
      expect(w.message).toBe("database unavailable, migrating alpha waits and tries again");
    }
  });

  it("gives up with DatabaseUnavailableError after the attempts allowed", async () => {
    const pool = connect(proxy.url, { max: 2 });
    pools.push(pool);
    const log = recorder();
    proxy.setMode("reset");
    try {
      const failed = migrateSchema(pool.sql, pool.db, "beta", alpha, {
        logger: log,
        wait: { ...quick, attempts: 3 },
      });

      await expect(failed).rejects.toBeInstanceOf(DatabaseUnavailableError);
      await expect(failed).rejects.toMatchObject({ attempts: 3, cause: { code: "ECONNRESET" } });
      expect(log.warnings.map((w) => w.fields.attempt)).toEqual([1, 2]);
    } finally {
      proxy.setMode("pass");
    }
  });
});

describe("whenDatabaseAvailable", () => {
  it("throws any other error at once, without waiting", async () => {
    const log = recorder();
    let calls = 0;
    const undefinedTable = Object.assign(new Error("relation does not exist"), { code: "42P01" });

    const run = whenDatabaseAvailable(
      "a test",
      async () => {
        calls++;
        throw undefinedTable;
      },
      log,
      quick,
    );

    await expect(run).rejects.toBe(undefinedTable);
    expect(calls).toBe(1);
    expect(log.warnings).toEqual([]);
  });

  it("tells a database that is starting or gone from other failures", () => {
    for (const code of ["57P03", "57P01", "08006", "ECONNREFUSED", "ECONNRESET", "CONNECTION_CLOSED"])
      expect(isDatabaseUnavailable({ code })).toBe(true);
    for (const code of ["23505", "42P01", "28P01", "ENOTFOUND", "CONNECTION_ENDED"])
      expect(isDatabaseUnavailable({ code })).toBe(false);
    expect(isDatabaseUnavailable(new Error("no code"))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
  });
});
