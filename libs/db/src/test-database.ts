import { randomBytes } from "node:crypto";
import postgres from "postgres";
import type { Sql } from "./connect.ts";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a fresh database for one test run on the server of `baseUrl` (default
 * TEST_DATABASE_URL or the local server), so concurrent runs never share rows.
 */
export async function createTestDatabase(
  baseUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
): Promise<TestDatabase> {
  const name = `gw_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = postgres(baseUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/**
 * The values a `CHECK (col in (...))` constraint of the migrated schema lists, in order:
 * what tests compare with the code's own list of the column's values.
 */
export async function checkConstraintValues(sql: Sql, schema: string, constraint: string): Promise<string[]> {
  const [row] = await sql<{ def: string }[]>`
    select pg_get_constraintdef(c.oid) as def from pg_constraint c
    join pg_namespace n on n.oid = c.connamespace
    where n.nspname = ${schema} and c.conname = ${constraint} and c.contype = 'c'`;
  return [...(row?.def ?? "").matchAll(/'([a-z_]+)'/g)].map((m) => m[1] as string);
}
