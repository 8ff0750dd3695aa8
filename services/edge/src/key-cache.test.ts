import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEdge, startEdge } from "./app.ts";
import { configSchema } from "./config.ts";
import { ADMIN_TOKEN, type EdgeTestDatabase, edgeTestDatabase, fakeClients } from "./testing.ts";

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

/** One edge replica of a stack: its own process state, key cache and NATS connection. */
async function replica(prefix: string): Promise<RunningEdge & { base: string }> {
  const config = configSchema.parse({
    DATABASE_URL: database.testDb.url,
    EVENTS_PREFIX: prefix,
    PORT: "0",
    METRICS_PORT: "0",
    ADMIN_TOKEN,
    LOG_LEVEL: "silent",
    DB_POOL_MAX: "2",
  });
  const edge = await startEdge(config, {
    clients: fakeClients({ ledger: { getBalances: () => ({ balances: [] }) } }),
  });
  return { ...edge, base: `http://127.0.0.1:${edge.port}` };
}

const adminCall = async (base: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}/admin/v1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  expect(res.status).toBeLessThan(300);
  return (await res.json()) as Record<string, string>;
};

const balances = async (base: string, apiKey: string) =>
  (await fetch(`${base}/v1/balances`, { headers: { "x-api-key": apiKey } })).status;

describe("the API key cache across edge replicas", () => {
  it("serves a known key from the cache, and a key revoked on one replica gets 401 at once on both", async () => {
    const prefix = `t_${randomBytes(4).toString("hex")}`;
    const a = await replica(prefix);
    const b = await replica(prefix);
    try {
      const { merchant_id } = await adminCall(a.base, "/merchants", { name: "M" });
      const { shop_id } = await adminCall(a.base, "/shops", { merchant_id, name: "S" });
      const { key_id, api_key } = await adminCall(a.base, `/shops/${shop_id}/api-keys`);

      // A new key works at once on a replica that never saw it (unknown keys are not cached).
      expect(await balances(b.base, api_key!)).toBe(200);
      // B now answers from its cache: a change made behind the edge's back (no
      // invalidation) does not reach it, while A, which has not cached the key, sees it.
      await database.sql`update edge.api_keys set revoked_at = now() where id = ${key_id!}`;
      expect(await balances(b.base, api_key!)).toBe(200);
      expect(await balances(a.base, api_key!)).toBe(401);
      await database.sql`update edge.api_keys set revoked_at = null where id = ${key_id!}`;
      expect(await balances(a.base, api_key!)).toBe(200);
      expect(await balances(a.base, api_key!)).toBe(200);

      // Revoked through A: the very next request is refused on both, cached or not.
      await adminCall(a.base, `/api-keys/${key_id}/revoke`);
      expect(await balances(b.base, api_key!)).toBe(401);
      expect(await balances(a.base, api_key!)).toBe(401);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it("keeps every replica's answers right under concurrent requests around a revocation", async () => {
    const prefix = `t_${randomBytes(4).toString("hex")}`;
    const a = await replica(prefix);
    const b = await replica(prefix);
    try {
      const { merchant_id } = await adminCall(a.base, "/merchants", { name: "M" });
      const { shop_id } = await adminCall(a.base, "/shops", { merchant_id, name: "S" });
      const { key_id, api_key } = await adminCall(a.base, `/shops/${shop_id}/api-keys`);
      const burst = () =>
        Promise.all(Array.from({ length: 20 }, (_, i) => balances(i % 2 ? a.base : b.base, api_key!)));
      expect(new Set(await burst())).toEqual(new Set([200]));
      await adminCall(a.base, `/api-keys/${key_id}/revoke`);
      expect(new Set(await burst())).toEqual(new Set([401]));
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
