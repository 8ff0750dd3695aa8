import { memoryLogger } from "@gw/edge/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BACKOFFICE_CSP, LOGIN_BODY_LIMIT } from "./app.ts";
import { sessions as sessionTable } from "./db/schema.ts";
import { SESSION_IDLE_MS, SESSION_TTL_MS } from "./sessions.ts";
import {
  ADMIN_TOKEN,
  type BackofficeTestDatabase,
  backofficeTestDatabase,
  csrfOf,
  get,
  Jar,
  login,
  ORIGIN,
  post,
  testBackoffice,
} from "./testing.ts";

// Login, logout and the server-side session (issue 27): the cookie holds an opaque id
// whose hash is a row in backoffice.sessions, looked up on every request.

let database: BackofficeTestDatabase;
beforeAll(async () => {
  database = await backofficeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe("back office login", () => {
  it("sends a page without a session to the login form, with a strict CSP", async () => {
    const { app } = testBackoffice(database);
    const { res } = await get(app, new Jar(), "/backoffice");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/backoffice/login");
    // With a trailing slash, the same page (and the query kept).
    const slash = await get(app, new Jar(), "/backoffice/?q=x");
    expect(slash.res.headers.get("location")).toBe("/backoffice?q=x");
    const form = await get(app, new Jar(), "/backoffice/login");
    expect(form.res.headers.get("content-security-policy")).toBe(BACKOFFICE_CSP);
    expect(form.html).toContain('<label for="token">Admin token</label>');
  });

  it("exchanges the admin token for an HttpOnly, SameSite=Strict cookie holding only an id whose hash is stored", async () => {
    const { app } = testBackoffice(database);
    const { jar, res } = await login(app);
    expect(res.res.status).toBe(303);
    const cookie = res.res.headers.getSetCookie().find((c) => c.startsWith("gw_backoffice="));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\//);
    // Local runs over plain HTTP: not Secure and no __Host- prefix; anywhere else both.
    expect(cookie).not.toMatch(/Secure/);
    const id = jar.cookies.get("gw_backoffice") ?? "";
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await database.db.select().from(sessionTable);
    expect(rows.map((r) => r.idHash)).not.toContain(id);
    expect(JSON.stringify(rows)).not.toContain(id);
    expect((await get(app, jar, "/backoffice")).res.status).toBe(200);
  });

  it("names the cookies __Host- and marks them Secure over HTTPS", async () => {
    const { app } = testBackoffice(database);
    const jar = new Jar();
    const origin = "https://backoffice.example.test";
    const page = await app.request(`${origin}/backoffice/login`);
    jar.take(page);
    expect([...jar.cookies.keys()]).toEqual(["__Host-gw_backoffice_login"]);
    const res = await app.request(`${origin}/backoffice/login`, {
      method: "POST",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin },
      body: new URLSearchParams({ _csrf: csrfOf(await page.text()), token: ADMIN_TOKEN }).toString(),
    });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("__Host-gw_backoffice="));
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Domain/i);
  });

  it("refuses a wrong token and a login form without its CSRF token, and logs no token", async () => {
    const { logger, lines } = memoryLogger();
    const { app } = testBackoffice(database, { logger });
    const wrong = await login(app, "not-the-token-not-the-token-not-the-token");
    expect(wrong.res.res.status).toBe(401);
    expect(wrong.jar.cookies.has("gw_backoffice")).toBe(false);
    const jar = new Jar();
    await get(app, jar, "/backoffice/login");
    const forged = await post(app, jar, "/backoffice/login", { _csrf: "forged", token: ADMIN_TOKEN });
    expect(forged.res.status).toBe(403);
    expect(lines.join("\n")).not.toContain(ADMIN_TOKEN);
  });

  it("answers 413 to a login body over its few KiB, declared or not, before reading it", async () => {
    const { app } = testBackoffice(database);
    const jar = new Jar();
    const page = await get(app, jar, "/backoffice/login");
    const big = new URLSearchParams({ _csrf: csrfOf(page.html), token: "x".repeat(LOGIN_BODY_LIMIT) });
    const declared = await app.request(`${ORIGIN}/backoffice/login`, {
      method: "POST",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: big.toString(),
    });
    expect(declared.status).toBe(413);
    // Streamed without a Content-Length: counted while read.
    const bytes = new TextEncoder().encode(big.toString());
    const streamed = await app.request(`${ORIGIN}/backoffice/login`, {
      method: "POST",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: new ReadableStream({
        start(ctl) {
          for (let i = 0; i < bytes.length; i += 1024) ctl.enqueue(bytes.slice(i, i + 1024));
          ctl.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
  });
});

describe("back office sessions end on the server", () => {
  it("gives the old cookie the login page after logout", async () => {
    const { app } = testBackoffice(database);
    const { jar } = await login(app);
    const copy = new Jar();
    for (const [k, v] of jar.cookies) copy.cookies.set(k, v);
    const page = await get(app, jar, "/backoffice");
    expect(page.res.status).toBe(200);
    const out = await post(app, jar, "/backoffice/logout", { _csrf: csrfOf(page.html) });
    expect(out.res.headers.get("location")).toBe("/backoffice/login");
    // The copied cookie still holds the id: the server no longer takes it.
    const after = await get(app, copy, "/backoffice");
    expect(after.res.status).toBe(303);
    expect(after.res.headers.get("location")).toBe("/backoffice/login");
    const write = await post(app, copy, "/backoffice/merchants", {
      _csrf: csrfOf(page.html),
      merchant_name: "after logout",
    });
    expect(write.res.status).toBe(401);
  });

  it("ends every session at once on 'end all sessions'", async () => {
    const { app } = testBackoffice(database);
    const a = await login(app);
    const b = await login(app);
    const page = await get(app, a.jar, "/backoffice");
    expect((await get(app, b.jar, "/backoffice")).res.status).toBe(200);
    await post(app, a.jar, "/backoffice/sessions/end-all", { _csrf: csrfOf(page.html) });
    expect((await get(app, b.jar, "/backoffice")).res.headers.get("location")).toBe("/backoffice/login");
    expect((await get(app, a.jar, "/backoffice")).res.headers.get("location")).toBe("/backoffice/login");
  });

  it("ends a session left idle, and any session after its absolute lifetime however busy", async () => {
    let now = Date.now();
    const { app } = testBackoffice(database, { now: () => now });
    const idle = await login(app);
    now += SESSION_IDLE_MS - 120_000;
    expect((await get(app, idle.jar, "/backoffice")).res.status).toBe(200);
    now += SESSION_IDLE_MS - 120_000;
    // Used a moment ago (within the idle timeout): still live.
    expect((await get(app, idle.jar, "/backoffice")).res.status).toBe(200);
    now += SESSION_IDLE_MS + 1;
    expect((await get(app, idle.jar, "/backoffice")).res.headers.get("location")).toBe("/backoffice/login");

    const busy = await login(app);
    const start = now;
    while (now - start < SESSION_TTL_MS - SESSION_IDLE_MS) {
      now += SESSION_IDLE_MS / 2;
      expect((await get(app, busy.jar, "/backoffice/config")).res.status).toBe(200);
    }
    now = start + SESSION_TTL_MS + 1;
    expect((await get(app, busy.jar, "/backoffice")).res.headers.get("location")).toBe("/backoffice/login");
  });

  it("takes no id it did not issue", async () => {
    const { app } = testBackoffice(database);
    const jar = new Jar();
    jar.cookies.set("gw_backoffice", "A".repeat(43));
    expect((await get(app, jar, "/backoffice")).res.status).toBe(303);
    jar.cookies.set("gw_backoffice", "'; drop table backoffice.sessions; --");
    expect((await get(app, jar, "/backoffice")).res.status).toBe(303);
  });
});
