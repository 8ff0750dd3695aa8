import { admin } from "@gw/edge/testing";
import { anOperation, configFakes, type FakeServices, memoryLogger, OP_ID, RECEIPT_FILE } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BACKOFFICE_CSP, REVIEWS_CSP } from "./app.ts";
import { MERCHANTS_PER_PAGE } from "./pages/merchants.ts";
import { RECEIPT_FILE_CSP } from "./pages/reviews.ts";
import {
  type BackofficeTestDatabase,
  backofficeTestDatabase,
  csrfOf,
  get,
  login,
  post,
  testBackoffice,
} from "./testing.ts";

// The back office's pages over a real edge app (its admin API on the test database, with
// stand-ins for the services behind it; the real ones meet in the browser suite).

let database: BackofficeTestDatabase;
beforeAll(async () => {
  database = await backofficeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe("back office forms", () => {
  it("refuses a POST without the session's CSRF token or from another origin, and changes nothing", async () => {
    const { app, edge } = testBackoffice(database);
    const { jar } = await login(app);
    const page = await get(app, jar, "/backoffice");
    const count = async () =>
      ((await admin(edge, "GET", "/admin/v1/merchants?limit=200")).body.merchants as unknown[]).length;
    const before = await count();
    expect((await post(app, jar, "/backoffice/merchants", { merchant_name: "X" })).res.status).toBe(403);
    expect(
      (await post(app, jar, "/backoffice/merchants", { _csrf: "nope", merchant_name: "X" })).res.status,
    ).toBe(403);
    const cross = await post(
      app,
      jar,
      "/backoffice/merchants",
      { _csrf: csrfOf(page.html), merchant_name: "X" },
      "https://evil.example",
    );
    expect(cross.res.status).toBe(403);
    expect(await count()).toBe(before);
  });

  it("creates a merchant and a shop, issues a key shown once, and revokes it", async () => {
    const { app, edge } = testBackoffice(database);
    const { jar } = await login(app);
    const csrf = csrfOf((await get(app, jar, "/backoffice")).html);
    const merchant = await post(app, jar, "/backoffice/merchants", {
      _csrf: csrf,
      merchant_name: "Acme & Co",
    });
    expect(merchant.res.headers.get("location")).toContain("notice=");
    const home = (await get(app, jar, "/backoffice")).html;
    expect(home).toContain("Acme &amp; Co");
    const merchantId = /<option value="([^"]+)">Acme &amp; Co<\/option>/.exec(home)?.[1] ?? "";
    const shop = await post(app, jar, "/backoffice/shops", {
      _csrf: csrf,
      merchant_id: merchantId,
      shop_name: "Main",
    });
    const shopPath = shop.res.headers.get("location")?.split("?")[0] ?? "";
    expect(shopPath).toMatch(/^\/backoffice\/shops\/[0-9a-f-]{36}$/);
    const shopId = shopPath.split("/").pop()!;
    expect((await get(app, jar, shopPath)).html).toContain("Main · merchant Acme &amp; Co");

    const issued = await post(app, jar, `${shopPath}/keys`, { _csrf: csrf });
    const key = /<code id="new-key">([^<]+)<\/code>/.exec(issued.html)?.[1];
    expect(key).toBeDefined();
    expect(issued.html).toContain("shown only once");
    expect((await edge.request("/v1/balances", { headers: { "x-api-key": key! } })).status).not.toBe(401);
    expect((await get(app, jar, shopPath)).html).not.toContain(key!);

    const keys = await admin(edge, "GET", `/admin/v1/shops/${shopId}/api-keys`);
    const keyId = (keys.body.api_keys as { key_id: string }[])[0]!.key_id;
    await post(app, jar, `${shopPath}/keys/${keyId}/revoke`, { _csrf: csrf });
    expect((await edge.request("/v1/balances", { headers: { "x-api-key": key! } })).status).toBe(401);
  });

  it("saves shop settings and shows the admin API's error for a bad one", async () => {
    const { app, edge } = testBackoffice(database);
    const { jar } = await login(app);
    const csrf = csrfOf((await get(app, jar, "/backoffice")).html);
    const m = await admin(edge, "POST", "/admin/v1/merchants", { name: "S" });
    const s = await admin(edge, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "S" });
    const shopPath = `/backoffice/shops/${s.body.shop_id}`;
    const saved = await post(app, jar, `${shopPath}/settings`, {
      _csrf: csrf,
      hosted_page_enabled: "on",
      flexible_picker: "ranges",
    });
    expect(saved.res.headers.get("location")).toContain("Settings%20saved");
    const settings = await admin(edge, "GET", `/admin/v1/shops/${s.body.shop_id}/settings`);
    expect(settings.body).toMatchObject({ hosted_page_enabled: true, flexible_picker: "ranges" });
    const bad = await post(app, jar, `${shopPath}/settings`, { _csrf: csrf, flexible_picker: "wheel" });
    const next = await get(app, jar, bad.res.headers.get("location")!);
    expect(next.html).toContain('role="alert"');
    expect(next.html).toContain("flexible_picker must be amount or ranges");
  });

  it("escapes names an operator or merchant typed, in text and in attribute values", async () => {
    const { app, edge } = testBackoffice(database, {
      fakes: {
        operations: {
          getShopPage: async (req) => ({
            shopId: req.shopId,
            displayName: `Tom's "Shop"><script>alert(2)</script>`,
          }),
        },
      },
    });
    const { jar } = await login(app);
    const tag = `xss${Date.now().toString(36)}`;
    const m = await admin(edge, "POST", "/admin/v1/merchants", { name: `${tag}<script>alert(1)</script>` });
    const s = await admin(edge, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "X" });
    const list = (await get(app, jar, `/backoffice?q=${tag}`)).html;
    expect(list).not.toContain("<script>alert(");
    expect(list).toContain(`<td>${tag}&lt;script&gt;alert(1)&lt;/script&gt;<br>`);
    expect(list).toContain(`value="${tag}"`);
    const shopPage = (await get(app, jar, `/backoffice/shops/${s.body.shop_id}`)).html;
    expect(shopPage).not.toContain("<script>alert(");
    expect(shopPage).toContain(
      'name="display_name" value="Tom&#39;s &quot;Shop&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"',
    );
  });
});

describe("the merchant list", () => {
  it("shows the newest merchants first, pages past the first page, and finds one by name or by a shop's id", async () => {
    const { app, edge } = testBackoffice(database);
    const { jar } = await login(app);
    const tag = `pg${Date.now().toString(36)}`;
    const total = MERCHANTS_PER_PAGE + 5;
    let firstShop = "";
    for (let i = 0; i < total; i++) {
      const m = await admin(edge, "POST", "/admin/v1/merchants", {
        name: `${tag}-${String(i).padStart(3, "0")}`,
      });
      if (i === 0) {
        const s = await admin(edge, "POST", "/admin/v1/shops", {
          merchant_id: m.body.merchant_id,
          name: `${tag}-shop`,
        });
        firstShop = s.body.shop_id as string;
      }
    }
    const first = (await get(app, jar, `/backoffice?q=${tag}`)).html;
    const names = (html: string) =>
      [...html.matchAll(new RegExp(`<td>(${tag}-\\d{3})<br>`, "g"))].map((m) => m[1]);
    expect(names(first)).toHaveLength(MERCHANTS_PER_PAGE);
    expect(names(first)[0]).toBe(`${tag}-${String(total - 1).padStart(3, "0")}`);
    const next = /<a href="([^"]+)" rel="next">/.exec(first)?.[1]?.replaceAll("&amp;", "&") ?? "";
    expect(next).toContain("cursor=");
    const second = (await get(app, jar, next)).html;
    expect(names(second)).toEqual([4, 3, 2, 1, 0].map((i) => `${tag}-00${i}`));
    expect(second).not.toContain('rel="next"');
    // By a shop's id: its merchant, with the shop linked.
    const byShop = (await get(app, jar, `/backoffice?q=${firstShop}`)).html;
    expect(names(byShop)).toEqual([`${tag}-000`]);
    expect(byShop).toContain(`href="/backoffice/shops/${firstShop}"`);
    // The search field shows what was searched.
    expect(byShop).toContain(`value="${firstShop}"`);
  });
});

describe("pages that show the current configuration", () => {
  it("lists providers on the config page and a shop's route and pricing in its forms", async () => {
    const { app, edge } = testBackoffice(database, { fakes: configFakes() });
    const { jar } = await login(app);
    const config = (await get(app, jar, "/backoffice/config")).html;
    expect(config).toContain("<td>acme</td><td>sandbox</td>");
    const m = await admin(edge, "POST", "/admin/v1/merchants", { name: "M" });
    const s = await admin(edge, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "S" });
    const shop = (await get(app, jar, `/backoffice/shops/${s.body.shop_id}`)).html;
    expect(shop).toContain("<td>WT_RUB_PHONE</td><td>acme, self_matching</td><td>acme</td><td>USDT</td>");
    expect(shop).toContain('name="payin" value="acme, self_matching"');
    expect(shop).toContain('<option value="USDT" selected>');
    expect(shop).toContain('name="payin_percent" value="3.25"');
  });

  it("embeds the manual check's receipt from a same-origin URL behind the session, with what it says, never logged", async () => {
    const { logger, lines } = memoryLogger();
    const { app } = testBackoffice(database, { fakes: configFakes(), logger });
    const anon = await app.request(`http://127.0.0.1/backoffice/reviews/${OP_ID}/receipt`);
    expect(anon.headers.get("location")).toBe("/backoffice/login");
    const { jar } = await login(app);
    const page = await get(app, jar, "/backoffice/reviews");
    expect(page.res.headers.get("content-security-policy")).toBe(REVIEWS_CSP);
    expect(page.html).toContain(`<iframe class="receipt" src="/backoffice/reviews/${OP_ID}/receipt"`);
    expect(page.html).toContain("<dt>Amount on the receipt</dt><dd>1499.00</dd>");
    const file = await app.request(`http://127.0.0.1/backoffice/reviews/${OP_ID}/receipt`, {
      headers: { cookie: jar.header() },
    });
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("application/pdf");
    expect(file.headers.get("content-security-policy")).toBe(`${RECEIPT_FILE_CSP}; frame-ancestors 'self'`);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(RECEIPT_FILE);
    const none = await get(app, jar, "/backoffice/reviews/0191a5e4-7c1b-7b8e-9d4e-dddddddddddd/receipt");
    expect(none.res.status).toBe(404);
    expect(lines.join("\n")).not.toContain("%PDF");
    expect((await get(app, jar, "/backoffice/config")).res.headers.get("content-security-policy")).toBe(
      BACKOFFICE_CSP,
    );
  });
});

describe("finding an operation", () => {
  const SHOP = "0191a5e4-7c1b-7b8e-9d4e-cccccccccccc";
  const asked: unknown[] = [];
  const found = (): FakeServices => ({
    operations: {
      findOperations: async (req) => {
        asked.push(req.id);
        if (req.id.value !== OP_ID && req.id.value !== "order-77") return { operations: [] };
        return {
          operations: [
            {
              shopId: SHOP,
              merchantId: "0191a5e4-7c1b-7b8e-9d4e-eeeeeeeeeeee",
              provider: "acme",
              operation: anOperation({
                operationId: OP_ID,
                merchantOperationId: "order-77",
                status: "completed",
              }),
              legs: [
                {
                  id: "leg-1",
                  provider: "acme",
                  providerLegId: "acme-991",
                  amount: "1500.00",
                  completedAt: "2026-11-21T10:05:00.000Z",
                },
              ],
              receipts: [{ id: "leg-1", amount: "1500.00", completedAt: "2026-11-21T10:05:00.000Z" }],
            },
          ],
        };
      },
    },
    webhooks: {
      listDeliveries: async (req) => ({
        deliveries:
          req.operationId === OP_ID
            ? [
                {
                  eventId: "0191a5e4-7c1b-7b8e-9d4e-ffffffffffff",
                  eventType: "payment.completed",
                  operationId: OP_ID,
                  status: "delivered",
                  attempts: 2,
                  lastStatusCode: 204,
                  createdAt: "2026-11-21T10:05:01.000Z",
                  shopId: "",
                },
              ]
            : [],
      }),
    },
    providerFacts: { listProviderFacts: async () => ({ providerFacts: [] }) },
  });

  it("finds one by its id and by the merchant's id, with its legs, receipts and webhook deliveries", async () => {
    const { app } = testBackoffice(database, { fakes: found() });
    const { jar } = await login(app);
    for (const q of [OP_ID, "order-77"]) {
      const page = await get(app, jar, `/backoffice/operations?q=${encodeURIComponent(q)}`);
      expect(page.res.status).toBe(200);
      expect(page.html).toContain(`<code>${OP_ID}</code>`);
      expect(page.html).toContain('<td>acme</td><td class="mono">acme-991</td><td class="mono">1500.00</td>');
      expect(page.html).toContain("<td>payment.completed</td><td>delivered</td><td>2</td>");
      expect(page.html).toContain(`href="/backoffice/shops/${SHOP}"`);
    }
    // A UUID is asked as both ids; anything else as the merchant's only.
    expect(asked).toEqual([
      { case: "operationId", value: OP_ID },
      { case: "merchantOperationId", value: OP_ID },
      { case: "merchantOperationId", value: "order-77" },
    ]);
    const none = await get(app, jar, "/backoffice/operations?q=nothing-here");
    expect(none.html).toContain("No operation has the id “nothing-here”.");
  });

  it("shows a shop's current webhook URL, payer-page name and return link in its settings form", async () => {
    const { app, edge } = testBackoffice(database, {
      fakes: {
        webhooks: { getEndpoint: async () => ({ url: "https://merchant.example.test/hooks" }) },
        operations: {
          getShopPage: async (req) => ({
            shopId: req.shopId,
            displayName: "Coffee Beans",
            returnUrl: "https://coffee.example.test/",
          }),
        },
      },
    });
    const { jar } = await login(app);
    const m = await admin(edge, "POST", "/admin/v1/merchants", { name: "W" });
    const s = await admin(edge, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "W" });
    const html = (await get(app, jar, `/backoffice/shops/${s.body.shop_id}`)).html;
    expect(html).toContain('name="webhook_url" value="https://merchant.example.test/hooks"');
    expect(html).toContain('name="display_name" value="Coffee Beans"');
    expect(html).toContain('name="return_url" value="https://coffee.example.test/"');
  });
});
