import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { prune, RetentionJob } from "@gw/db";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MATCHING_RETENTION, PAYIN_GENERATIONS_KEEP_MS } from "./retention.ts";
import { admitMother, inMemoryClient, type PoolHarness, payoutMother, startPool } from "./test-support.ts";

// Bounded by design (issue 26, item 5): `matching.payin_generations` gains one row per
// admitted payin; the retention job removes the rows no Admit can need any more, and
// keeps those of payins whose slot is still reserved.

let h: PoolHarness;
let client: Client<typeof MatchingService>;

beforeAll(async () => {
  h = await startPool();
  client = inMemoryClient(h.handlers);
});
afterAll(() => h?.stop());

/** Makes a payin's generations row (and its released slot) look `ms` old. */
const age = (payinId: string, ms: number) =>
  h.sql`
    with g as (
      update matching.payin_generations set updated_at = now() - make_interval(secs => ${ms / 1000})
      where payin_id = ${payinId})
    update matching.slots set settled_at = now() - make_interval(secs => ${ms / 1000}), created_at = now() - make_interval(secs => ${ms / 1000})
    where payin_id = ${payinId}`;

const generationsOf = async (ids: string[]) =>
  (
    await h.sql<{ payin_id: string }[]>`
      select payin_id from matching.payin_generations where payin_id in ${h.sql(ids)} order by payin_id`
  ).map((r) => r.payin_id);

describe("the retention of matching's bookkeeping", () => {
  it("deletes a week-old payin's generations once its slot is released, and keeps a reserved one's and a recent one's", async () => {
    await client.addPayout(payoutMother({ amount: "3000.00" }));
    const released = randomUUID();
    const reserved = randomUUID();
    const recent = randomUUID();
    for (const payinId of [released, reserved, recent])
      await client.admit({ ...admitMother("100.00", { payinId }), generation: 3n });
    await client.releaseSlot({ payinId: released, reason: "rejected", generation: 4n });
    await client.releaseSlot({ payinId: recent, reason: "rejected", generation: 4n });
    const old = PAYIN_GENERATIONS_KEEP_MS + 3_600_000;
    await age(released, old);
    await age(reserved, old);
    expect(await generationsOf([released, reserved, recent])).toHaveLength(3);

    const job = new RetentionJob(h.sql, MATCHING_RETENTION, {
      intervalMs: 0,
      onError: (_rule, err) => {
        throw err;
      },
    });
    const pruned = await job.runOnce();
    expect(pruned["matching.payin_generations"]).toBeGreaterThanOrEqual(1);
    expect(await generationsOf([released, reserved, recent])).toEqual([reserved, recent].sort());
    // Idempotent: a second pass (another replica) finds nothing more of these.
    await job.runOnce();
    expect(await generationsOf([released, reserved, recent])).toEqual([reserved, recent].sort());
  });

  it("deletes in bounded batches until nothing old is left", async () => {
    const rows = 2_500;
    await h.sql`
      insert into matching.payin_generations (payin_id, admitted, released, updated_at)
      select gen_random_uuid(), 1, 1, now() - interval '30 days' from generate_series(1, ${rows})`;
    const rule = MATCHING_RETENTION[0];
    if (!rule) throw new Error("no rule");
    expect(await prune(h.sql, rule)).toBeGreaterThanOrEqual(rows);
    const [left] = await h.sql<{ n: number }[]>`
      select count(*)::int as n from matching.payin_generations where updated_at < now() - interval '8 days'`;
    expect(left?.n).toBe(0);
  });
});
