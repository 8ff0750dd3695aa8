import { Code, ConnectError } from "@connectrpc/connect";
import { failure } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  type FakeServices,
  merchant,
  testApp,
} from "../testing.ts";

// The edge's side of the availability endpoints: validation, the per-shop rate limit,
// Cache-Control, and how the answers of operations (coverage, 412) and matching (busy,
// slow) become HTTP. The pool itself is tested in services/matching and over HTTP in
// tests/e2e/pool.test.ts.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const QUERY = "method=WT_RUB_C2C&currency=RUB&min_amount=100.00&max_amount=5000.00";
const RECOMMEND = {
  method: "WT_RUB_C2C",
  currency: "RUB",
  amount: "1000.00",
  min_amount: "100.00",
  max_amount: "5000.00",
};

const pool = (calls: { coverage: string[] } = { coverage: [] }): FakeServices => ({
  operations: {
    getPoolCoverage: (req) => {
      calls.coverage.push(req.scope?.shopId ?? "");
      return { coverage: "full" };
    },
  },
  matching: {
    availability: (req) => ({
      method: req.method,
      currency: req.currency,
      evaluatedAt: "2026-11-21T10:00:00.000Z",
      coverage: req.coverage,
      reserved: false,
      truncated: false,
      intervals: [
        { minAmount: "100.00", maxAmount: "900.00" },
        { minAmount: "1000.00", maxAmount: "1000.00" },
      ],
    }),
    recommendations: (req) => ({
      method: req.method,
      currency: req.currency,
      evaluatedAt: "2026-11-21T10:00:00.000Z",
      coverage: req.coverage,
      reserved: false,
      truncated: true,
      intervals: [{ minAmount: "1000.00", maxAmount: "1000.00" }],
      recommendations: [{ amount: "1000.00", delta: "0.00" }],
    }),
  },
});

async function setup(fakes: FakeServices) {
  const app = testApp(database, { fakes });
  const shop = await aShopWithKey(app);
  return { app, shop };
}

describe("GET /v1/payment/availability", () => {
  it("answers the pool's intervals with the shop's coverage, reserved false and Cache-Control no-store", async () => {
    const calls = { coverage: [] as string[] };
    const { app, shop } = await setup(pool(calls));
    const res = await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${QUERY}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toEqual({
      method: "WT_RUB_C2C",
      currency: "RUB",
      evaluated_at: "2026-11-21T10:00:00.000Z",
      coverage: "full",
      reserved: false,
      truncated: false,
      intervals: [
        { min_amount: "100.00", max_amount: "900.00" },
        { min_amount: "1000.00", max_amount: "1000.00" },
      ],
    });
    expect(calls.coverage).toEqual([shop.shopId]);
  });

  it.each([
    ["method=WT_RUB_C2C&currency=RUB&min_amount=100.00", "max_amount"],
    ["method=WT_XXX&currency=RUB&min_amount=1.00&max_amount=2.00", "method"],
    ["method=WT_RUB_C2C&currency=USDT&min_amount=1.00&max_amount=2.00", "method"],
    ["method=WT_RUB_C2C&currency=RUB&min_amount=0.00&max_amount=2.00", "min_amount"],
    ["method=WT_RUB_C2C&currency=RUB&min_amount=1.5&max_amount=2.00", "min_amount"],
    ["method=WT_RUB_C2C&currency=RUB&min_amount=3.00&max_amount=2.00", "min_amount"],
  ])("refuses %s with 400 naming %s, still no-store", async (query, field) => {
    const { app, shop } = await setup(pool());
    const res = await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: "validation_failed", field } });
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("answers 412 when the shop has no route or no pricing for the range", async () => {
    const { app, shop } = await setup({
      ...pool(),
      operations: {
        getPoolCoverage: () => {
          throw failure(
            Code.FailedPrecondition,
            "pricing_not_configured",
            "no pricing tier covers this amount",
          );
        },
      },
    });
    const res = await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${QUERY}`);
    expect(res.status).toBe(412);
    expect(res.body).toMatchObject({ error: { code: "pricing_not_configured" } });
  });

  it("answers 503 at once when the pool replica is busy with another read", async () => {
    const { app, shop } = await setup({
      ...pool(),
      matching: {
        availability: () => {
          throw failure(Code.Unavailable, "read_capacity_exhausted", "another read is running");
        },
      },
    });
    const res = await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${QUERY}`);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: { code: "read_capacity_exhausted" } });
  });

  it("answers 503 when the read does not finish within the 2 s budget", async () => {
    const { app, shop } = await setup({
      ...pool(),
      matching: {
        availability: (_req, ctx) =>
          new Promise((_resolve, reject) => {
            ctx.signal.addEventListener("abort", () =>
              reject(new ConnectError("late", Code.DeadlineExceeded)),
            );
          }),
      },
    });
    const res = await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${QUERY}`);
    expect(res.status).toBe(503);
  });
});

describe("a peer of another version during a rolling deploy", () => {
  const get = (app: Parameters<typeof merchant>[0], apiKey: string) =>
    merchant(app, apiKey, "GET", `/v1/payment/availability?${QUERY}`);
  const post = (app: Parameters<typeof merchant>[0], apiKey: string) =>
    merchant(app, apiKey, "POST", "/v1/payment/recommendations", RECOMMEND);

  const expect503 = (res: Awaited<ReturnType<typeof merchant>>, code: string) => {
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code });
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("cache-control")).toBe("no-store");
  };

  it("answers 503 when the pool replica does not know the read (Unimplemented)", async () => {
    const { app, shop } = await setup({ operations: pool().operations });
    expect503(await get(app, shop.apiKey), "dependency_unavailable");
    expect503(await post(app, shop.apiKey), "dependency_unavailable");
  });

  it("answers 503 when operations does not know the coverage read (Unimplemented), without reading the pool", async () => {
    let reads = 0;
    const { app, shop } = await setup({
      matching: {
        availability: () => {
          reads++;
          throw new Error("not reached");
        },
      },
    });
    expect503(await get(app, shop.apiKey), "dependency_unavailable");
    expect(reads).toBe(0);
  });

  it.each([
    ["drops the coverage it does not know", { coverage: "" }],
    ["answers without evaluated_at", { evaluatedAt: "" }],
    ["answers for another method", { method: "WT_RUB_PHONE" }],
  ])("answers 503 incompatible_version when the pool replica %s", async (_, skew) => {
    const fakes = pool();
    const { app, shop } = await setup({
      ...fakes,
      matching: {
        availability: async (req, ctx) => ({
          ...(await fakes.matching!.availability!(req, ctx)),
          ...skew,
        }),
        recommendations: async (req, ctx) => ({
          ...(await fakes.matching!.recommendations!(req, ctx)),
          ...skew,
        }),
      },
    });
    expect503(await get(app, shop.apiKey), "incompatible_version");
    expect503(await post(app, shop.apiKey), "incompatible_version");
  });
});

describe("POST /v1/payment/recommendations", () => {
  it("answers the recommendations with the availability fields", async () => {
    const { app, shop } = await setup(pool());
    const res = await merchant(app, shop.apiKey, "POST", "/v1/payment/recommendations", RECOMMEND);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toMatchObject({
      coverage: "full",
      reserved: false,
      truncated: true,
      recommendations: [{ amount: "1000.00", delta: "0.00" }],
    });
  });

  it.each([
    [{ ...RECOMMEND, amount: undefined }, "amount"],
    [{ ...RECOMMEND, limit: 11 }, "limit"],
    [{ ...RECOMMEND, limit: 0 }, "limit"],
    [{ ...RECOMMEND, limit: 2.5 }, "limit"],
    [{ ...RECOMMEND, min_amount: "6000.00" }, "min_amount"],
  ])("refuses %j with 400 naming %s", async (body, field) => {
    const { app, shop } = await setup(pool());
    const res = await merchant(app, shop.apiKey, "POST", "/v1/payment/recommendations", body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { field } });
  });
});

describe("the rate limit of both endpoints", () => {
  it("takes 5 requests per second per shop across both endpoints, then answers 429 with Retry-After", async () => {
    const { app, shop } = await setup(pool());
    const other = await aShopWithKey(app);
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(await merchant(app, shop.apiKey, "GET", `/v1/payment/availability?${QUERY}`));
    for (let i = 0; i < 2; i++)
      answers.push(await merchant(app, shop.apiKey, "POST", "/v1/payment/recommendations", RECOMMEND));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);

    const over = await merchant(app, shop.apiKey, "POST", "/v1/payment/recommendations", RECOMMEND);
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: { code: "rate_limited" } });
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(over.headers.get("cache-control")).toBe("no-store");

    // Another shop has its own budget.
    const elsewhere = await merchant(app, other.apiKey, "GET", `/v1/payment/availability?${QUERY}`);
    expect(elsewhere.status).toBe(200);
  });
});
