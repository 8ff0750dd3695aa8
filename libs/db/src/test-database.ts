import { randomBytes } from "node:crypto";
import postgres from "postgres";

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
