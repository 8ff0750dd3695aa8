import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "./errors.ts";
import {
  ADMIN_TOKEN,
  admin,
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  merchant,
  testApp,
} from "./testing.ts";

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const balancesFake = {
  ledger: {
    getBalances: async () => ({
      balances: [{ currency: "RUB", balance: "0.00", currentMinus: "0.00", reserved: "0.00" }],
    }),
  },
};

describe("API key authentication", () => {
  it("refuses a request without the header with 401 saying the x-api-key header is required", async () => {
    const app = testApp(database);
    const res = await app.request("/v1/balances");
    expect(res.status).toBe(401);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe("api_key_required");
    expect(body.error.message).toMatch(/x-api-key header is required/i);
    expect(typeof body.request_id).toBe("string");
    expect(body.request_id).toBe(res.headers.get("x-request-id"));
  });

  it("refuses an unknown key with 401 invalid api key", async () => {
    const app = testApp(database);
    const res = await merchant(
      app,
      "gw_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      "GET",
      "/v1/balances",
    );
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: "invalid_api_key", message: "invalid api key" });
  });

  it("refuses a key of the wrong shape with the same 401 invalid api key", async () => {
    const app = testApp(database);
    const res = await merchant(app, "not-a-key", "GET", "/v1/balances");
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: "invalid_api_key", message: "invalid api key" });
  });

  it("authenticates before reading the body: a bad body without a key is a 401, not a 400", async () => {
    const app = testApp(database);
    const res = await app.request("/v1/payment", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(res.status).toBe(401);
  });

  it("accepts the header name in any case", async () => {
    const app = testApp(database, { fakes: balancesFake });
    const { apiKey } = await aShopWithKey(app);
    const res = await app.request("/v1/balances", { headers: { "X-API-KEY": apiKey } });
    expect(res.status).toBe(200);
  });

  it("refuses a revoked key on the very next request, also through a second app on the same database", async () => {
    const first = testApp(database, { fakes: balancesFake });
    const second = testApp(database, { fakes: balancesFake });
    const { apiKey, keyId } = await aShopWithKey(first);
    expect((await merchant(second, apiKey, "GET", "/v1/balances")).status).toBe(200);

    const revoked = await admin(first, "POST", `/admin/v1/api-keys/${keyId}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));

    const afterOnFirst = await merchant(first, apiKey, "GET", "/v1/balances");
    const afterOnSecond = await merchant(second, apiKey, "GET", "/v1/balances");
    expect(afterOnFirst.status).toBe(401);
    expect(afterOnSecond.status).toBe(401);
    expect(afterOnSecond.body.error).toEqual({ code: "invalid_api_key", message: "invalid api key" });
  });

  it("keeps a shop's other keys working when one is revoked", async () => {
    const app = testApp(database, { fakes: balancesFake });
    const { apiKey, keyId, shopId } = await aShopWithKey(app);
    const other = await admin(app, "POST", `/admin/v1/shops/${shopId}/api-keys`);
    await admin(app, "POST", `/admin/v1/api-keys/${keyId}/revoke`);
    expect((await merchant(app, apiKey, "GET", "/v1/balances")).status).toBe(401);
    expect((await merchant(app, other.body.api_key as string, "GET", "/v1/balances")).status).toBe(200);
  });

  it("takes the scope from the key only, ignoring merchant_id and shop_id in the body", async () => {
    let seenScope: unknown;
    const app = testApp(database, {
      fakes: {
        operations: {
          createOperation: async (req) => {
            seenScope = { merchantId: req.scope?.merchantId, shopId: req.scope?.shopId };
            return { operation: anOperation() };
          },
        },
      },
    });
    const { apiKey, merchantId, shopId } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", {
      merchant_operation_id: "order-1",
      client_id: "user-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
      merchant_id: "00000000-0000-0000-0000-000000000001",
      shop_id: "00000000-0000-0000-0000-000000000002",
    });
    expect(res.status).toBe(200);
    expect(seenScope).toEqual({ merchantId, shopId });
  });
});

describe("API key issuance", () => {
  it("returns the plaintext once and stores only its sha256", async () => {
    const app = testApp(database);
    const { apiKey, keyId, shopId } = await aShopWithKey(app);
    expect(apiKey).toMatch(/^gw_live_[A-Za-z0-9_-]{43}$/);

    const listed = await admin(app, "GET", `/admin/v1/shops/${shopId}/api-keys`);
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(apiKey);
    expect(listed.body.api_keys).toEqual([
      {
        key_id: keyId,
        prefix: apiKey.slice(0, 12),
        created_at: expect.any(String),
        revoked_at: null,
        permissions: null,
      },
    ]);

    const [row] = await database.sql`select key_hash from edge.api_keys where id = ${keyId}`;
    expect(row?.key_hash).toBe(createHash("sha256").update(apiKey).digest("hex"));
  });

  it("leaves the plaintext nowhere in the database", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const secretPart = apiKey.slice("gw_live_".length);
    const tables = await database.sql<{ name: string }[]>`
      select format('%I.%I', table_schema, table_name) as name from information_schema.tables
      where table_schema in ('edge', 'drizzle')`;
    expect(tables.length).toBeGreaterThan(3);
    for (const { name } of tables) {
      const rows = await database.sql.unsafe(`select t::text as row from ${name} t`);
      for (const { row } of rows) {
        expect(row).not.toContain(apiKey);
        expect(row).not.toContain(secretPart);
      }
    }
  });

  it("answers 404 for keys of a shop that does not exist", async () => {
    const app = testApp(database);
    const res = await admin(app, "POST", "/admin/v1/shops/0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e/api-keys");
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: "not_found", message: "shop not found" });
  });

  it("answers 404 for revoking a key that does not exist", async () => {
    const app = testApp(database);
    const res = await admin(app, "POST", "/admin/v1/api-keys/not-a-uuid/revoke");
    expect(res.status).toBe(404);
  });

  it("refuses a shop for a merchant that does not exist, naming merchant_id", async () => {
    const app = testApp(database);
    const res = await admin(app, "POST", "/admin/v1/shops", {
      merchant_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
      name: "x",
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ field: "merchant_id" });
  });
});

describe("restricted keys (403)", () => {
  const AVAILABILITY =
    "/v1/payment/availability?method=WT_RUB_C2C&currency=RUB&min_amount=100.00&max_amount=500.00";
  const RECOMMEND = {
    method: "WT_RUB_C2C",
    currency: "RUB",
    amount: "200.00",
    min_amount: "100.00",
    max_amount: "500.00",
  };
  const FLEXIBLE = {
    merchant_operation_id: "order-1",
    client_id: "user-1",
    method: "WT_RUB_C2C",
    currency: "RUB",
    recommended_amount: "200.00",
  };

  /** Fakes that count what reached the services behind the edge. */
  function counted() {
    const calls = { coverage: 0, flexible: 0 };
    const read = {
      method: "WT_RUB_C2C",
      currency: "RUB",
      evaluatedAt: "2026-11-21T10:00:00.000Z",
      coverage: "full",
      reserved: false,
      truncated: false,
      intervals: [],
      recommendations: [],
    };
    const fakes = {
      ...balancesFake,
      operations: {
        getPoolCoverage: async () => {
          calls.coverage++;
          return { coverage: "full" };
        },
        createFlexibleLink: async () => {
          calls.flexible++;
          return {
            link: {
              operationId: anOperation().operationId,
              status: "rejected",
              method: "WT_RUB_C2C",
              currency: "RUB",
              recommendedAmount: "200.00",
            },
          };
        },
      },
      matching: { availability: async () => read, recommendations: async () => read },
    };
    return { calls, app: testApp(database, { fakes }) };
  }

  const issue = async (app: ReturnType<typeof testApp>, shopId: string, body?: unknown) => {
    const res = await admin(app, "POST", `/admin/v1/shops/${shopId}/api-keys`, body);
    expect(res.status).toBe(201);
    return res.body;
  };

  it("lets a key issued without permissions call every endpoint", async () => {
    const { app, calls } = counted();
    const { apiKey } = await aShopWithKey(app);
    expect((await merchant(app, apiKey, "GET", AVAILABILITY)).status).toBe(200);
    expect((await merchant(app, apiKey, "POST", "/v1/payment/recommendations", RECOMMEND)).status).toBe(200);
    expect((await merchant(app, apiKey, "POST", "/v1/payment/link/flexible", FLEXIBLE)).status).toBe(200);
    expect(calls).toEqual({ coverage: 2, flexible: 1 });
  });

  it("answers 403 key_not_authorized to a key restricted to other groups, before anything reaches a service", async () => {
    const { app, calls } = counted();
    const { shopId } = await aShopWithKey(app);
    const flexOnly = await issue(app, shopId, { permissions: ["flexible_links"] });
    expect(flexOnly.permissions).toEqual(["flexible_links"]);
    const key = flexOnly.api_key as string;
    for (const res of [
      await merchant(app, key, "GET", AVAILABILITY),
      await merchant(app, key, "POST", "/v1/payment/recommendations", RECOMMEND),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error).toEqual({
        code: "key_not_authorized",
        message: "this api key is not authorized for the availability endpoints",
      });
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    expect(calls.coverage).toBe(0);
    // The group it has, and the endpoints no key can be restricted from, answer as usual.
    expect((await merchant(app, key, "POST", "/v1/payment/link/flexible", FLEXIBLE)).status).toBe(200);
    expect((await merchant(app, key, "GET", "/v1/balances")).status).toBe(200);

    const readsOnly = (await issue(app, shopId, { permissions: ["availability"] })).api_key as string;
    const refused = await merchant(app, readsOnly, "POST", "/v1/payment/link/flexible", FLEXIBLE);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: "key_not_authorized" });
    expect(calls.flexible).toBe(1);
    expect((await merchant(app, readsOnly, "GET", AVAILABILITY)).status).toBe(200);

    const listed = await admin(app, "GET", `/admin/v1/shops/${shopId}/api-keys`);
    expect((listed.body.api_keys as { permissions: unknown }[]).map((k) => k.permissions)).toEqual([
      ["availability"],
      ["flexible_links"],
      null,
    ]);
  });

  it("takes no rate-limit token for a refused call", async () => {
    const { app } = counted();
    const { shopId, apiKey } = await aShopWithKey(app);
    const none = (await issue(app, shopId, { permissions: [] })).api_key as string;
    for (let i = 0; i < 10; i++) expect((await merchant(app, none, "GET", AVAILABILITY)).status).toBe(403);
    // The shop's 5 per second are all still there for a key that may read.
    for (let i = 0; i < 5; i++) expect((await merchant(app, apiKey, "GET", AVAILABILITY)).status).toBe(200);
  });

  it("answers 401, not 403, once a restricted key is revoked", async () => {
    const { app } = counted();
    const { shopId } = await aShopWithKey(app);
    const issued = await issue(app, shopId, { permissions: [] });
    await admin(app, "POST", `/admin/v1/api-keys/${issued.key_id}/revoke`);
    const res = await merchant(app, issued.api_key as string, "GET", AVAILABILITY);
    expect(res.status).toBe(401);
  });

  it("refuses an unknown permission with 400 and issues nothing", async () => {
    const { app } = counted();
    const { shopId } = await aShopWithKey(app);
    const res = await admin(app, "POST", `/admin/v1/shops/${shopId}/api-keys`, { permissions: ["payouts"] });
    expect(res.status).toBe(400);
    const listed = await admin(app, "GET", `/admin/v1/shops/${shopId}/api-keys`);
    expect(listed.body.api_keys).toHaveLength(1);
  });
});

describe("admin authentication", () => {
  it.each([
    ["no header", undefined],
    ["a wrong token", `Bearer ${ADMIN_TOKEN}x`],
    ["a token without the Bearer scheme", ADMIN_TOKEN],
    ["an API key", "Bearer gw_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"],
  ])("refuses %s with 401 in the one error body", async (_, authorization) => {
    const app = testApp(database);
    const res = await app.request("/admin/v1/merchants", {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ name: "M" }),
    });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toEqual({
      error: { code: "unauthorized", message: expect.any(String) },
      request_id: expect.any(String),
    });
  });

  it("creates a merchant with the right token", async () => {
    const app = testApp(database);
    const res = await admin(app, "POST", "/admin/v1/merchants", { name: "M" });
    expect(res.status).toBe(201);
    expect(res.body.merchant_id).toMatch(/^[0-9a-f-]{36}$/);
  });
});
