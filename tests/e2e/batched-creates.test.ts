import { randomUUID } from "node:crypto";
import type { ProvisionedShop } from "@gw/stack/provision";
import postgres from "postgres";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Concurrent creates of one operations replica share one claim statement (one commit).
// A replica killed with such a statement in flight must leave each create of it as a
// single create dying there would: claimed and driven by nobody, taken over by the
// merchant's retry once its routing deadline has passed, and answered once, with one
// operation per key and one create at the provider per operation.

const CREATES = 16;

describe("operations killed with a batch of claims in flight", () => {
  let stack: TestStack;
  let sql: postgres.Sql;

  beforeAll(async () => {
    stack = await startTestStack({
      extraEnv: {
        // A short budget, so the killed creates' routing deadlines pass within the test.
        CREATE_BUDGET_MS: "2000",
        MAX_IN_FLIGHT_PER_KEY: "64",
        // A statement waiting on the held key keeps the creates behind it queued (by
        // default they would go beside it after 50 ms), so the test knows what is in flight.
        WRITE_BATCH_STALL_MS: "60000",
      },
    });
    // Two connections may hold keys; the others read while they do.
    sql = postgres(stack.databaseUrl, { max: 4, onnotice: () => {} });
  });

  afterAll(async () => {
    await sql?.end();
    await stack?.stop();
  });

  /**
   * Claim statements of this database waiting on a row lock now: a lone claim's statement
   * names its insert early; a batch's, past the first 1,024 characters `pg_stat_activity`
   * keeps, is known by its `budget_ms`.
   */
  const waitingClaims = () =>
    sql`select 1 from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ~ '(insert into operations[.]operations|budget_ms)'`;

  /** Claims operations has sent, and how many creates they carried (its batch-size histogram). */
  async function claimBatches(): Promise<{ statements: number; creates: number }> {
    const instance = (await stack.instances()).find((i) => i.service === "operations");
    const text = await (await fetch(`http://127.0.0.1:${instance?.metricsPort}/metrics`)).text();
    const value = (suffix: string) =>
      Number(
        new RegExp(`^operations_write_batch_size_${suffix}\\{kind="claim"\\} (\\S+)$`, "m").exec(text)?.[1] ??
          0,
      );
    return { statements: value("count"), creates: value("sum") };
  }

  /** Creates of one shop by key, answered with their status and body (0: the connection failed). */
  const creator = (shop: ProvisionedShop) => async (mop: string) => {
    try {
      const res = await request(`${stack.urls.edge}/v1/payment`, {
        method: "POST",
        headers: { "x-api-key": shop.apiKey, "content-type": "application/json" },
        body: JSON.stringify({
          merchant_operation_id: mop,
          client_id: "client",
          method: "WT_RUB_C2C",
          amount: "1000.00",
          currency: "RUB",
        }),
      });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    } catch (err) {
      return { status: 0, body: { error: (err as Error).message } as Record<string, unknown> };
    }
  };

  /**
   * Another transaction inserting `mop`'s key and holding it until `release`, then rolling
   * back: a claim statement carrying the key waits on it, then claims it.
   */
  async function holdKey(shop: ProvisionedShop, mop: string) {
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: holding, resolve: ready } = Promise.withResolvers<void>();
    const done = sql
      .begin(async (tx) => {
        await tx`
          insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash,
            type, status, expected_amount, currency)
          values (${randomUUID()}, ${shop.shopId}, ${shop.merchantId}, ${mop}, 'held', 'payment', 'routing',
            '1000.00', 'RUB')`;
        ready();
        await released;
        throw new Error("rolled back on purpose");
      })
      .catch(() => {});
    await holding;
    return {
      release: async () => {
        release();
        await done;
      },
    };
  }

  /**
   * What a merchant whose creates died with the replica sees after retrying each with the
   * same body: every one answered pending, one operation per key, one create per operation
   * at the provider.
   */
  async function answeredOnce(shop: ProvisionedShop, mops: string[]) {
    const create = creator(shop);
    const settled = await Promise.all(
      mops.map((mop) =>
        pollUntil(
          `create ${mop} to be answered`,
          () => create(mop),
          (r) => r.status === 200,
          60_000,
        ),
      ),
    );
    for (const [i, s] of settled.entries())
      expect(s.body).toMatchObject({ merchant_operation_id: mops[i], status: "pending" });
    const rows = await sql<{ status: string; n: number }[]>`
      select min(status) as status, count(*)::int as n from operations.operations
      where shop_id = ${shop.shopId} and merchant_operation_id = any(${mops}::text[])
      group by merchant_operation_id`;
    expect(rows).toHaveLength(mops.length);
    for (const r of rows) expect(r).toMatchObject({ status: "pending", n: 1 });
    const [atProvider] = await sql<{ n: number }[]>`
      select count(*)::int as n from sandbox.operations
      where reference = any(${settled.map((s) => s.body.operation_id as string)}::text[])`;
    expect(atProvider?.n).toBe(mops.length);
  }

  /** A shop whose route and pricing one create has cached, so its creates claim first. */
  async function warmShop(name: string) {
    const shop = await stack.provisionShop({ name });
    expect((await creator(shop)(`warm-${randomUUID()}`)).status).toBe(200);
    return shop;
  }

  const keys = () => Array.from({ length: CREATES }, () => `batch-${randomUUID()}`);
  const failedOrUnknown = [0, 500, 502, 503, 504];

  it("ends the creates queued behind a claim in flight as single creates would", async () => {
    const shop = await warmShop("batch-queued");
    const create = creator(shop);
    const mops = keys();
    const hold = await holdKey(shop, mops[0] as string);
    const before = await claimBatches();
    const first = create(mops[0] as string);
    await pollUntil(
      "the first claim to wait on the held key",
      waitingClaims,
      (rows) => rows.length === 1,
      10_000,
    );
    const rest = mops.slice(1).map(create);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await claimBatches()).statements).toBe(before.statements + 1);
    await stack.kill("operations");
    await hold.release();
    // Nobody was answered a success by a process that died before recording it.
    for (const a of await Promise.all([first, ...rest])) expect(failedOrUnknown).toContain(a.status);
    await stack.restart("operations");
    await answeredOnce(shop, mops);
  }, 180_000);

  it("ends every create of a batch of several in flight as a single create would", async () => {
    const shop = await warmShop("batch-in-flight");
    const create = creator(shop);
    const mops = keys();
    // The first statement waits on one key while the others queue; released, it lets the
    // next statement (the queued creates, together) go, which waits on the second key.
    const a = await holdKey(shop, mops[0] as string);
    const b = await holdKey(shop, mops.at(-1) as string);
    const before = await claimBatches();
    const first = create(mops[0] as string);
    await pollUntil("the first claim to wait", waitingClaims, (rows) => rows.length === 1, 10_000);
    const rest = mops.slice(1).map(create);
    await new Promise((r) => setTimeout(r, 1000));
    await a.release();
    const inFlight = await pollUntil(
      "a statement carrying the queued creates to wait",
      async () => ({ waiting: (await waitingClaims()).length, batches: await claimBatches() }),
      (s) => s.waiting === 1 && s.batches.statements >= before.statements + 2,
      10_000,
    );
    // The statement in flight carries several creates: the dying replica's batch.
    expect(inFlight.batches.creates - before.creates - 1).toBeGreaterThan(1);
    await stack.kill("operations");
    await b.release();
    for (const ans of await Promise.all(rest)) expect(failedOrUnknown).toContain(ans.status);
    await first;
    await stack.restart("operations");
    await answeredOnce(shop, mops);
  }, 180_000);
});
