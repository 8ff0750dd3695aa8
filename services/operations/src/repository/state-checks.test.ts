import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import {
  checkConstraintValues,
  connect,
  createTestDatabase,
  migrateSchema,
  type Sql,
  type TestDatabase,
} from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDOFF_MACHINE } from "../domain/handoff-states.ts";
import { LINK_MACHINE } from "../domain/link-states.ts";
import { OPERATION_STATUSES, OPERATION_TYPES } from "../domain/operation-states.ts";
import {
  FACT_DIRECTIONS,
  FACT_KINDS,
  FACT_MACHINE,
  FACT_RESOLUTIONS,
} from "../domain/provider-fact-states.ts";
import { StateMoveRefusedError } from "../domain/state-machine.ts";
import { WITHDRAWAL_MACHINE } from "../domain/withdrawal-states.ts";
import { insertHandOff } from "./handoffs.ts";
import { LinkRepository } from "./links.ts";
import { insertFact, markFactResolved } from "./provider-facts.ts";
import { insertWithdrawal, WithdrawalRepository } from "./withdrawals.ts";

// The side state machines on Postgres: a move their table does not have is refused by the
// repository's guard (the row stays as it was), and a status no table has is refused by
// the column's CHECK, whoever writes it.

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 2 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

const statusOf = async (table: string, key: string, id: string) =>
  (
    await sql<
      { status: string }[]
    >`select status from ${sql(`operations.${table}`)} where ${sql(key)} = ${id}`
  )[0]?.status;

async function newLink(): Promise<string> {
  const id = randomUUID();
  await new LinkRepository(sql).insert(
    {
      operation_id: id,
      shop_id: randomUUID(),
      merchant_id: randomUUID(),
      merchant_operation_id: randomUUID(),
      request_hash: "hash",
      client_id: "client",
      client_ip: null,
      method: "WT_RUB_C2C",
      currency: "RUB",
      recommended_amount: "1000.00",
      min_amount: null,
      max_amount: null,
      picker: "amount",
      k_hash: "00",
    },
    60_000,
  );
  return id;
}

async function newFact(): Promise<string> {
  const id = randomUUID();
  await insertFact(sql, {
    id,
    provider: "a",
    reference: randomUUID(),
    fact_key: "callback:1",
    operation_id: null,
    shop_id: null,
    merchant_id: null,
    kind: "not_routed",
    provider_status: "completed",
    direction: "payin",
    amount: "10.00",
    currency: "RUB",
  });
  return id;
}

describe("the guards of the side state machines", () => {
  it("refuses to move a decided link again, and leaves it as it was", async () => {
    const links = new LinkRepository(sql);
    const id = await newLink();
    expect(await statusOf("flexible_links", "operation_id", id)).toBe(LINK_MACHINE.initial);
    const first = await links.claim(id, "deciding", 60_000);
    expect(await links.decide(id, first?.claim ?? "", "created")).toBe(true);
    // A claim of the created link (a confirmation of a link decided meanwhile) cannot decide it again.
    const second = await links.claim(id, "created", 60_000);
    await expect(links.decide(id, second?.claim ?? "", "amount_selection")).rejects.toBeInstanceOf(
      StateMoveRefusedError,
    );
    expect(await statusOf("flexible_links", "operation_id", id)).toBe("created");
    // A lapsed claim decides nothing, as before: `false`, no error.
    expect(await links.decide(id, randomUUID(), "rejected")).toBe(false);
  });

  it("ends a withdrawal once; a second end is a no-op, and an end the table does not have is refused", async () => {
    const repo = new WithdrawalRepository(sql);
    const id = randomUUID();
    await sql.begin((tx) => insertWithdrawal(tx, id, "a"));
    const w = await repo.asking(id, "a");
    if (!w) throw new Error("not written");
    expect(w.passed_over).toBe(false);
    // `held` is only for a passed-over payin; a cancel's withdrawal is never held.
    await expect(repo.end(w, "held", null)).rejects.toBeInstanceOf(StateMoveRefusedError);
    expect(await statusOf("withdrawals", "operation_id", id)).toBe("asking");
    expect(await repo.end(w, "withdrawn", null)).toBe(true);
    expect(await repo.end(w, "gave_up", "late")).toBe(false);
    expect(await statusOf("withdrawals", "operation_id", id)).toBe("withdrawn");
  });

  it("resolves a provider fact once; resolving it again is refused, its resolution kept", async () => {
    const id = await newFact();
    const resolve = (action: string) =>
      sql.begin((tx) =>
        markFactResolved(tx, id, { action, operator: "op", reason: "r", figures: undefined }),
      );
    expect((await resolve("return_to_payer"))?.status).toBe("resolved");
    await expect(resolve("write_off")).rejects.toBeInstanceOf(StateMoveRefusedError);
    const [fact] = await sql<{ resolution: string }[]>`
      select resolution from operations.provider_facts where id = ${id}`;
    expect(fact?.resolution).toBe("return_to_payer");
  });
});

describe("the status CHECKs", () => {
  /** The states a status CHECK of the migrated schema lists. */
  const checked = (name: string) => checkConstraintValues(sql, "operations", name);

  it("list each table's states (and the other value sets) in the database", async () => {
    expect(await checked("operations_status")).toEqual([...OPERATION_STATUSES]);
    expect(await checked("flexible_links_status")).toEqual([...LINK_MACHINE.states]);
    expect(await checked("pool_handoffs_status")).toEqual([...HANDOFF_MACHINE.states]);
    expect(await checked("withdrawals_status")).toEqual([...WITHDRAWAL_MACHINE.states]);
    expect(await checked("provider_facts_status")).toEqual([...FACT_MACHINE.states]);
    expect(await checked("operations_type")).toEqual([...OPERATION_TYPES]);
    expect(await checked("provider_facts_kind")).toEqual([...FACT_KINDS]);
    expect(await checked("provider_facts_direction")).toEqual([...FACT_DIRECTIONS]);
    expect(await checked("provider_facts_resolution")).toEqual([...FACT_RESOLUTIONS]);
  });

  it("refuse a status no table has, whoever writes it", async () => {
    const refused = { code: "23514" };
    const link = await newLink();
    await expect(
      sql`update operations.flexible_links set status = 'expired' where operation_id = ${link}`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "flexible_links_status" });

    const handOff = randomUUID();
    await sql.begin((tx) => insertHandOff(tx, handOff, "10.00", ["a"]));
    await expect(
      sql`update operations.pool_handoffs set status = 'given_up' where operation_id = ${handOff}`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "pool_handoffs_status" });

    const withdrawal = randomUUID();
    await sql.begin((tx) => insertWithdrawal(tx, withdrawal, "a"));
    await expect(
      sql`update operations.withdrawals set status = 'cancelled' where operation_id = ${withdrawal}`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "withdrawals_status" });

    const fact = await newFact();
    expect(await statusOf("provider_facts", "id", fact)).toBe(FACT_MACHINE.initial);
    await expect(
      sql`update operations.provider_facts set status = 'closed' where id = ${fact}`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "provider_facts_status" });

    await expect(
      sql`insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, type, status)
        values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, 'mop', 'payment', 'refused')`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "operations_status" });
    await expect(
      sql`insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, type, status)
        values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, 'mop', 'payin', 'routing')`,
    ).rejects.toMatchObject({ ...refused, constraint_name: "operations_type" });
  });
});
