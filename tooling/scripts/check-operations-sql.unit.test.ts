import { describe, expect, it } from "vitest";
import { exempt, violations } from "./check-operations-sql.ts";

describe("check-operations-sql", () => {
  it("finds a tagged template and a postgres import outside the repository, with their lines", () => {
    const text = [
      'import type postgres from "postgres";',
      "export async function f(tx: postgres.TransactionSql) {",
      "  await tx<{ n: number }[]>`select 1 as n`;",
      "  return this.#sql`update operations.operations set version = version + 1`;",
      "}",
    ].join("\n");
    expect(violations("flexible.ts", text)).toEqual([
      'flexible.ts:1: imports "postgres"',
      "flexible.ts:3: tagged template `tx`...`",
      "flexible.ts:4: tagged template `this.#sql`...`",
    ]);
  });

  it("passes code that calls repository functions, and untagged templates", () => {
    const text = [
      'import { findLink } from "./repository/links.ts";',
      "export const f = async (id: string) => `link \u0024{(await findLink(id))?.status}`;",
    ].join("\n");
    expect(violations("flexible.ts", text)).toEqual([]);
  });

  it("leaves the repository, the drizzle schema and tests alone, and no other file of src/", () => {
    expect(exempt("repository/links.ts")).toBe(true);
    expect(exempt("db/schema.ts")).toBe(true);
    expect(exempt("flexible.test.ts")).toBe(true);
    expect(exempt("lifecycle/apply.unit.test.ts")).toBe(true);
    // Test support lives in services/operations/test/, outside what is checked; a file of
    // src/ is production code whatever its name.
    expect(exempt("test-support.ts")).toBe(false);
    expect(exempt("flexible.ts")).toBe(false);
    expect(exempt("lifecycle/apply.ts")).toBe(false);
  });
});
