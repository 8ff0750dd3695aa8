import { randomUUID } from "node:crypto";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { connect, createTestDatabase, migrateSchema, type Sql } from "@gw/db";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { migrationsFolder } from "./app.ts";
import { PoolStore } from "./pool.ts";
import { PoolReads, ReadLimiter } from "./reads.ts";
import { MatchingHandlers } from "./service.ts";

export interface PoolHarness {
  sql: Sql;
  url: string;
  store: PoolStore;
  limiter: ReadLimiter;
  reads: PoolReads;
  handlers: MatchingHandlers;
  stop(): Promise<void>;
}

/** A migrated `matching` schema in a fresh database, with the engine and handlers on it. */
export async function startPool(
  options: { readBudgetMs?: number; poolMax?: number } = {},
): Promise<PoolHarness> {
  const database = await createTestDatabase();
  const { sql, db } = connect(database.url, { max: options.poolMax ?? 8, application: "matching-test" });
  await migrateSchema(sql, db, "matching", migrationsFolder);
  const store = new PoolStore(sql, `t_${randomUUID().slice(0, 8)}`);
  const limiter = new ReadLimiter();
  const reads = new PoolReads(store, limiter, options.readBudgetMs ?? 2000);
  return {
    sql,
    url: database.url,
    store,
    limiter,
    reads,
    handlers: new MatchingHandlers(store, reads),
    async stop() {
      await sql.end({ timeout: 5 });
      await database.drop();
    },
  };
}

/** A payout request with sensible defaults: RUB card rail, window open for an hour. */
export function payoutMother(
  overrides: Partial<{
    operationId: string;
    shopId: string;
    method: string;
    currency: string;
    amount: string;
    windowEndsAt: string;
    number: string;
  }> = {},
) {
  return {
    operationId: overrides.operationId ?? randomUUID(),
    shopId: overrides.shopId ?? randomUUID(),
    method: overrides.method ?? "WT_RUB_C2C",
    currency: overrides.currency ?? "RUB",
    amount: overrides.amount ?? "1000.00",
    destination: { number: overrides.number ?? "4111111111111111", name: "IVAN PETROV" },
    windowEndsAt: overrides.windowEndsAt ?? new Date(Date.now() + 3600_000).toISOString(),
  };
}

/** An admission request with defaults: a new payin id, RUB card rail, a 10-minute slot. */
export function admitMother(
  amount: string,
  overrides: Partial<{ payinId: string; slotLifetimeMs: bigint }> = {},
) {
  return {
    payinId: overrides.payinId ?? randomUUID(),
    shopId: randomUUID(),
    method: "WT_RUB_C2C",
    currency: "RUB",
    amount,
    slotLifetimeMs: overrides.slotLifetimeMs ?? 600_000n,
  };
}

/**
 * Seeds `count` open payouts straight into the schema in one statement, for the scan
 * and benchmark tests: free remainders `first`, `first + step`, ... (decimal text).
 */
export async function seedPayouts(
  sql: Sql,
  count: number,
  options: { first?: string; step?: string; windowEnded?: boolean; method?: string } = {},
): Promise<void> {
  await sql`
    insert into matching.pool_payouts
      (operation_id, shop_id, method, currency, amount, free_amount, number, name, window_ends_at, created_at)
    select gen_random_uuid(), gen_random_uuid(), ${options.method ?? "WT_RUB_C2C"}, 'RUB',
      ${options.first ?? "1000.00"}::numeric + (g - 1) * ${options.step ?? "1.00"}::numeric,
      ${options.first ?? "1000.00"}::numeric + (g - 1) * ${options.step ?? "1.00"}::numeric,
      '4111111111111111', 'SEED',
      now() + ${options.windowEnded ? "-1 hour" : "1 hour"}::interval,
      now() - interval '1 day' + g * interval '1 millisecond'
    from generate_series(1, ${count}::int) g`;
}

/** An in-memory client of the handlers (no network), for the RPC-level tests. */
export function inMemoryClient(handlers: MatchingHandlers): Client<typeof MatchingService> {
  return createClient(
    MatchingService,
    createRouterTransport(({ service }) => service(MatchingService, handlers)),
  );
}
