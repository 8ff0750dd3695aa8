import { configFakes, OP_ID, RECEIPT_FILE, RECEIPT_ID } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, admin, type EdgeTestDatabase, edgeTestDatabase, testApp } from "../testing.ts";
import { RECEIPT_FILE_CSP } from "./admin-receipt.ts";

// The admin reads (providers, routes, pricing) and the manual check's receipt file, through `app.request()` on the edge's real database
// with stand-ins for the downstream services (the real ones meet in the browser suite).

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe("admin reads of the configuration", () => {
  it("lists providers without their credentials", async () => {
    const app = testApp(database, { fakes: configFakes() });
    const res = await admin(app, "GET", "/admin/v1/providers");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      providers: [
        {
          name: "acme",
          kind: "sandbox",
          base_url: "https://acme.example.test",
          methods: ["WT_RUB_C2C"],
          updated_at: "2026-11-21T10:00:00.000Z",
        },
      ],
    });
    expect(JSON.stringify(res.body)).not.toContain("credentials");
  });

  it("lists a shop's routes and pricing, and answers 404 for an unknown shop", async () => {
    const app = testApp(database, { fakes: configFakes() });
    const m = await admin(app, "POST", "/admin/v1/merchants", { name: "M" });
    const s = await admin(app, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "S" });
    const routes = await admin(app, "GET", `/admin/v1/shops/${s.body.shop_id}/routes`);
    expect(routes.body).toEqual({
      routes: [
        {
          method: "WT_RUB_PHONE",
          payin: ["acme", "self_matching"],
          payout: ["acme"],
          settlement_currency: "USDT",
          updated_at: "2026-11-21T10:00:00.000Z",
        },
      ],
    });
    const pricing = await admin(app, "GET", `/admin/v1/shops/${s.body.shop_id}/pricing`);
    expect(pricing.body).toEqual({
      pricing: [
        {
          method: "WT_RUB_PHONE",
          payin: [{ min_amount: "100", max_amount: "50000", percent: "3.25", fixed: "7" }],
          payout: [],
        },
      ],
    });
    const unknown = await admin(app, "GET", "/admin/v1/shops/0191a5e4-7c1b-7b8e-9d4e-cccccccccccc/routes");
    expect(unknown.status).toBe(404);
  });

  it("documents the three reads and the receipt route in the OpenAPI", async () => {
    const doc = (await (await testApp(database).request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
    };
    expect(doc.paths["/admin/v1/providers"]?.get).toBeDefined();
    expect(doc.paths["/admin/v1/shops/{shop_id}/routes"]?.get).toBeDefined();
    expect(doc.paths["/admin/v1/shops/{shop_id}/pricing"]?.get).toBeDefined();
    const receipt = doc.paths["/admin/v1/manual-checks/{operation_id}/receipt"]?.get;
    expect(Object.keys(receipt?.responses["200"]?.content ?? {})).toEqual(["application/pdf"]);
  });
});

describe("the manual check's receipt file", () => {
  it("is served to the admin token only, as an inline PDF in a sandbox, never cached", async () => {
    const app = testApp(database, { fakes: configFakes() });
    expect((await app.request(`/admin/v1/manual-checks/${OP_ID}/receipt`)).status).toBe(401);
    const res = await app.request(`/admin/v1/manual-checks/${OP_ID}/receipt`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toBe(`inline; filename="receipt-${RECEIPT_ID}.pdf"`);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("content-security-policy")).toBe(`${RECEIPT_FILE_CSP}; frame-ancestors 'none'`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(RECEIPT_FILE);
  });

  it("answers 404 for a payment without a receipt and 400 for a bad id", async () => {
    const app = testApp(database, { fakes: configFakes() });
    const other = await admin(
      app,
      "GET",
      "/admin/v1/manual-checks/0191a5e4-7c1b-7b8e-9d4e-dddddddddddd/receipt",
    );
    expect(other.status).toBe(404);
    expect((await admin(app, "GET", "/admin/v1/manual-checks/nope/receipt")).status).toBe(400);
  });
});
