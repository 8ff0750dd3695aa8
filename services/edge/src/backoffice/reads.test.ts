import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECEIPT_FILE_CSP } from "../routes/admin-receipt.ts";
import {
  ADMIN_TOKEN,
  admin,
  anOperation,
  type EdgeTestDatabase,
  edgeTestDatabase,
  type FakeServices,
  memoryLogger,
  testApp,
} from "../testing.ts";
import { BACKOFFICE_CSP, REVIEWS_CSP } from "./routes.ts";

// The admin reads (providers, routes, pricing), the manual check's receipt file, and the
// back office pages that show them, through `app.request()` on the edge's real database
// with stand-ins for the downstream services (the real ones meet in the browser suite).

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const OP_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
const RECEIPT_ID = "0191a5e4-7c1b-7b8e-9d4e-aaaaaaaaaaaa";
const PDF = new TextEncoder().encode("%PDF-1.4\n% a receipt\n%%EOF\n");

const fakes = (): FakeServices => ({
  operations: {
    listProviders: async () => ({
      providers: [
        {
          name: "acme",
          kind: "sandbox",
          baseUrl: "https://acme.example.test",
          methods: ["WT_RUB_C2C"],
          updatedAt: "2026-11-21T10:00:00.000Z",
        },
      ],
    }),
    listRoutes: async () => ({
      routes: [
        {
          method: "WT_RUB_PHONE",
          payin: ["acme", "self_matching"],
          payout: ["acme"],
          settlementCurrency: "USDT",
          updatedAt: "2026-11-21T10:00:00.000Z",
        },
      ],
    }),
    listManualChecks: async () => ({
      items: [
        {
          shopId: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
          operation: anOperation({
            operationId: OP_ID,
            status: "manual_check",
            manualCheckReason: "potential_fake",
          }),
          receiptId: RECEIPT_ID,
          findings: [{ check: "incremental_update", outcome: "potential_fake", detail: "edited" }],
        },
      ],
    }),
  },
  ledger: {
    listPricing: async () => ({
      methods: [
        {
          method: "WT_RUB_PHONE",
          payin: [{ minAmount: "100", maxAmount: "50000", percent: "3.25", fixed: "7" }],
          payout: [],
        },
      ],
    }),
  },
  receipts: {
    getReviewFile: async (req) => {
      if (req.id.value !== OP_ID) throw new ConnectError("review not found", Code.NotFound);
      return {
        file: PDF,
        contentType: "text/html",
        fileName: '"><script>.pdf',
        sha256: "ab",
        receiptId: RECEIPT_ID,
        shopId: "x",
      };
    },
  },
});

/** A browser's cookies for one origin, just enough for the back office. */
async function session(app: ReturnType<typeof testApp>) {
  const cookies = new Map<string, string>();
  const take = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const i = pair.indexOf("=");
      cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
  };
  const header = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const page = await app.request("http://127.0.0.1/backoffice/login");
  take(page);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  take(
    await app.request("http://127.0.0.1/backoffice/login", {
      method: "POST",
      headers: { cookie: header(), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf, token: ADMIN_TOKEN }).toString(),
    }),
  );
  return (path: string) => app.request(`http://127.0.0.1${path}`, { headers: { cookie: header() } });
}

describe("admin reads of the configuration", () => {
  it("lists providers without their credentials", async () => {
    const app = testApp(database, { fakes: fakes() });
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
    const app = testApp(database, { fakes: fakes() });
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
    const app = testApp(database, { fakes: fakes() });
    expect((await app.request(`/admin/v1/manual-checks/${OP_ID}/receipt`)).status).toBe(401);
    const res = await app.request(`/admin/v1/manual-checks/${OP_ID}/receipt`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toBe(`inline; filename="receipt-${RECEIPT_ID}.pdf"`);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("content-security-policy")).toBe(`${RECEIPT_FILE_CSP}; frame-ancestors 'none'`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(PDF);
  });

  it("answers 404 for a payment without a receipt and 400 for a bad id", async () => {
    const app = testApp(database, { fakes: fakes() });
    const other = await admin(
      app,
      "GET",
      "/admin/v1/manual-checks/0191a5e4-7c1b-7b8e-9d4e-dddddddddddd/receipt",
    );
    expect(other.status).toBe(404);
    expect((await admin(app, "GET", "/admin/v1/manual-checks/nope/receipt")).status).toBe(400);
  });

  it("is embedded in the review page from a same-origin URL behind the session, and never logged", async () => {
    const { logger, lines } = memoryLogger();
    const app = testApp(database, { fakes: fakes(), logger });
    expect(
      (await app.request(`http://127.0.0.1/backoffice/reviews/${OP_ID}/receipt`)).headers.get("location"),
    ).toBe("/backoffice/login");
    const get = await session(app);
    const page = await get("/backoffice/reviews");
    const html = await page.text();
    expect(page.headers.get("content-security-policy")).toBe(REVIEWS_CSP);
    expect(REVIEWS_CSP).toContain("frame-src 'self'");
    expect(html).toContain(`<iframe class="receipt" src="/backoffice/reviews/${OP_ID}/receipt"`);
    const file = await get(`/backoffice/reviews/${OP_ID}/receipt`);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("application/pdf");
    expect(file.headers.get("content-security-policy")).toBe(`${RECEIPT_FILE_CSP}; frame-ancestors 'self'`);
    expect(file.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(PDF);
    expect((await get("/backoffice/reviews/0191a5e4-7c1b-7b8e-9d4e-dddddddddddd/receipt")).status).toBe(404);
    expect(lines.join("\n")).not.toContain("%PDF");
    // Other pages keep the strict policy without frames.
    expect((await get("/backoffice/config")).headers.get("content-security-policy")).toBe(BACKOFFICE_CSP);
  });
});

describe("the back office shows the current configuration", () => {
  it("lists providers on the config page and a shop's route and pricing in its forms", async () => {
    const app = testApp(database, { fakes: fakes() });
    const get = await session(app);
    const config = await (await get("/backoffice/config")).text();
    expect(config).toContain("<td>acme</td><td>sandbox</td>");
    expect(config).toContain("https://acme.example.test");
    const m = await admin(app, "POST", "/admin/v1/merchants", { name: "M" });
    const s = await admin(app, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "S" });
    const shop = await (await get(`/backoffice/shops/${s.body.shop_id}`)).text();
    expect(shop).toContain("<td>WT_RUB_PHONE</td><td>acme, self_matching</td><td>acme</td><td>USDT</td>");
    expect(shop).toContain('name="payin" value="acme, self_matching"');
    expect(shop).toContain('<option value="USDT" selected>');
    expect(shop).toContain('name="payin_percent" value="3.25"');
    expect(shop).toContain("3.25% + 7 (100–50000)");
  });
});
