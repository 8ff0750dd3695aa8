import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  admin,
  type EdgeTestDatabase,
  edgeTestDatabase,
  memoryLogger,
  testApp,
} from "../testing.ts";
import { BACKOFFICE_CSP } from "./routes.ts";
import { SESSION_TTL_MS, SessionKeys } from "./session.ts";

// The back office through `app.request()` on the edge's real database: login exchanging
// the admin token for a session cookie, CSRF on every form, key issuance shown once.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

type App = ReturnType<typeof testApp>;

/** A browser's cookie jar, just enough for one origin. */
class Jar {
  readonly cookies = new Map<string, string>();
  take(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const i = pair.indexOf("=");
      const value = pair.slice(i + 1);
      if (value === "") this.cookies.delete(pair.slice(0, i));
      else this.cookies.set(pair.slice(0, i), value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

async function get(app: App, jar: Jar, path: string) {
  const res = await app.request(`http://127.0.0.1${path}`, { headers: { cookie: jar.header() } });
  jar.take(res);
  return { res, html: await res.text() };
}

async function post(app: App, jar: Jar, path: string, form: Record<string, string>, origin?: string) {
  const res = await app.request(`http://127.0.0.1${path}`, {
    method: "POST",
    headers: {
      cookie: jar.header(),
      "content-type": "application/x-www-form-urlencoded",
      ...(origin ? { origin } : {}),
    },
    body: new URLSearchParams(form).toString(),
  });
  jar.take(res);
  return { res, html: await res.text() };
}

async function login(app: App, token = ADMIN_TOKEN) {
  const jar = new Jar();
  const page = await get(app, jar, "/backoffice/login");
  const res = await post(app, jar, "/backoffice/login", { _csrf: csrfOf(page.html), token });
  return { jar, res };
}

describe("back office login", () => {
  it("sends a page without a session to the login form, with a strict CSP", async () => {
    const app = testApp(database);
    const { res } = await get(app, new Jar(), "/backoffice");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/backoffice/login");
    const form = await get(app, new Jar(), "/backoffice/login");
    expect(form.res.headers.get("content-security-policy")).toBe(BACKOFFICE_CSP);
    expect(form.html).toContain('<label for="token">Admin token</label>');
  });

  it("exchanges the admin token for an HttpOnly, SameSite=Strict session cookie", async () => {
    const app = testApp(database);
    const { jar, res } = await login(app);
    expect(res.res.status).toBe(303);
    const cookie = res.res.headers.getSetCookie().find((c) => c.startsWith("gw_backoffice="));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/backoffice/);
    // Local runs over plain HTTP: not Secure; anywhere else it is.
    expect(cookie).not.toMatch(/Secure/);
    expect((await get(app, jar, "/backoffice")).res.status).toBe(200);
  });

  it("marks the cookie Secure outside local runs", async () => {
    const app = testApp(database);
    const jar = new Jar();
    const page = await app.request("https://backoffice.example.test/backoffice/login");
    jar.take(page);
    const res = await app.request("https://backoffice.example.test/backoffice/login", {
      method: "POST",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrfOf(await page.text()), token: ADMIN_TOKEN }).toString(),
    });
    expect(res.headers.getSetCookie().find((c) => c.startsWith("gw_backoffice="))).toMatch(/Secure/);
  });

  it("refuses a wrong token and a login form without its CSRF token, and logs no token", async () => {
    const { logger, lines } = memoryLogger();
    const app = testApp(database, { logger });
    const wrong = await login(app, "not-the-token-not-the-token-not-the-token");
    expect(wrong.res.res.status).toBe(401);
    expect(wrong.jar.cookies.has("gw_backoffice")).toBe(false);
    const jar = new Jar();
    await get(app, jar, "/backoffice/login");
    const forged = await post(app, jar, "/backoffice/login", { _csrf: "forged", token: ADMIN_TOKEN });
    expect(forged.res.status).toBe(403);
    expect(lines.join("\n")).not.toContain(ADMIN_TOKEN);
  });

  it("refuses an expired or altered session", () => {
    const keys = new SessionKeys(ADMIN_TOKEN);
    const value = keys.issue(0);
    expect(keys.verify(value, 1)).toBeDefined();
    expect(keys.verify(value, SESSION_TTL_MS + 1)).toBeUndefined();
    expect(keys.verify(`${value}x`, 1)).toBeUndefined();
    expect(new SessionKeys(`${ADMIN_TOKEN}-rotated`).verify(value, 1)).toBeUndefined();
  });
});

describe("back office forms", () => {
  it("refuses a POST without the session's CSRF token or from another origin, and changes nothing", async () => {
    const app = testApp(database);
    const { jar } = await login(app);
    const page = await get(app, jar, "/backoffice");
    const before = (await get(app, jar, "/backoffice")).html.match(/<tr>/g)?.length ?? 0;
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
    expect((await get(app, jar, "/backoffice")).html.match(/<tr>/g)?.length ?? 0).toBe(before);
  });

  it("creates a merchant and a shop, issues a key shown once, and revokes it", async () => {
    const app = testApp(database);
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

    const issued = await post(app, jar, `${shopPath}/keys`, { _csrf: csrf });
    const key = /<code id="new-key">([^<]+)<\/code>/.exec(issued.html)?.[1];
    expect(key).toBeDefined();
    expect(issued.html).toContain("shown only once");
    // The key works on the merchant API, and the next view of the shop does not show it.
    expect((await app.request("/v1/balances", { headers: { "x-api-key": key! } })).status).not.toBe(401);
    expect((await get(app, jar, shopPath)).html).not.toContain(key!);

    const keys = await admin(app, "GET", `/admin/v1/shops/${shopId}/api-keys`);
    const keyId = (keys.body.api_keys as { key_id: string }[])[0]!.key_id;
    await post(app, jar, `${shopPath}/keys/${keyId}/revoke`, { _csrf: csrf });
    expect((await app.request("/v1/balances", { headers: { "x-api-key": key! } })).status).toBe(401);
  });

  it("saves shop settings and shows the admin API's error for a bad one", async () => {
    const app = testApp(database);
    const { jar } = await login(app);
    const csrf = csrfOf((await get(app, jar, "/backoffice")).html);
    const m = await admin(app, "POST", "/admin/v1/merchants", { name: "S" });
    const s = await admin(app, "POST", "/admin/v1/shops", { merchant_id: m.body.merchant_id, name: "S" });
    const shopPath = `/backoffice/shops/${s.body.shop_id}`;
    const saved = await post(app, jar, `${shopPath}/settings`, {
      _csrf: csrf,
      hosted_page_enabled: "on",
      flexible_picker: "ranges",
    });
    expect(saved.res.headers.get("location")).toContain("Settings%20saved");
    const settings = await admin(app, "GET", `/admin/v1/shops/${s.body.shop_id}/settings`);
    expect(settings.body).toMatchObject({ hosted_page_enabled: true, flexible_picker: "ranges" });
    const bad = await post(app, jar, `${shopPath}/settings`, { _csrf: csrf, flexible_picker: "wheel" });
    const next = await get(app, jar, bad.res.headers.get("location")!);
    expect(next.html).toContain('role="alert"');
    expect(next.html).toContain("flexible_picker must be amount or ranges");
  });
});
