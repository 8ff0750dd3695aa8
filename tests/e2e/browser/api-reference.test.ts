import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "@gw/db";
import { buildApp } from "@gw/edge";
import type { EdgeClients } from "@gw/edge/deps";
import { createLogger } from "@gw/log";
import { createAdaptorServer } from "@hono/node-server";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, newContext, screenshot } from "../../src/browser.ts";

// The API reference a merchant opens at /docs, in Debian's Chromium: Scalar's page over
// the edge's own OpenAPI document. The edge's HTTP app is served in this process: the
// page and the document read neither the database nor a service (the client below
// never connects), so no stack is booted for it.

// biome-ignore lint/suspicious/noExplicitAny: the page's globals, seen from Node's types.
declare const document: any;

describe("the API reference at /docs in a browser", () => {
  const { sql, db } = connect("postgres://127.0.0.1:1/unused", { max: 1, application: "docs-test" });
  let server: Server;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let requests: string[];
  let page: Page;

  beforeAll(async () => {
    const app = buildApp({
      db,
      clients: {} as EdgeClients,
      logger: createLogger("docs-test", "silent"),
      adminToken: "x".repeat(32),
      payUrl: "http://127.0.0.1:8081",
      probes: { self: {}, downstream: {} },
    });
    server = createAdaptorServer({ fetch: app.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
    ({ context, requests } = await newContext(browser, "desktop"));
    page = await context.newPage();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await sql.end();
  });

  /** The sidebar's links in order, as `text → href`. */
  const sidebar = () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".references-sidebar a[href^='#']")].map(
        (a: { innerText: string; getAttribute(name: string): string }) =>
          `${a.innerText.trim()} → ${a.getAttribute("href")}`,
      ),
    );

  it("renders the reference with the merchant API first in its navigation, loading nothing from another origin", async () => {
    await page.goto(`${origin}/docs`);
    await page.getByRole("link", { name: "Admin API" }).waitFor({ timeout: 60_000 });
    const links = await sidebar();
    const at = (text: string) => links.findIndex((l) => l.startsWith(`${text} →`));
    expect(at("Merchant API")).toBeGreaterThanOrEqual(0);
    expect(at("Merchant API")).toBeLessThan(at("merchant API"));
    expect(at("merchant API")).toBeLessThan(at("webhooks"));
    expect(at("webhooks")).toBeLessThan(at("Admin API"));
    expect(at("Admin API")).toBeLessThan(at("Providers and probes"));
    // The first section after the introduction is the merchant API's.
    // Scalar renders the sections as they scroll into view: past the introduction's last
    // heading, the next section is drawn.
    const merchantSection = page.locator("h2").filter({ hasText: "merchant API" }).first();
    for (let i = 0; i < 20 && !(await merchantSection.isVisible()); i++) {
      await page.mouse.wheel(0, 1500);
      await page.waitForTimeout(500);
    }
    await merchantSection.waitFor({ timeout: 30_000 });
    const sections = await page.evaluate(() =>
      [...document.querySelectorAll("h2")].map((h: { innerText: string }) => h.innerText.trim()),
    );
    const firstTag = sections.find((s: string) => /API|admin|webhooks|providers|probes/.test(s));
    expect(firstTag).toMatch(/^merchant API/);
    expect(requests.filter((url) => !url.startsWith(origin) && !url.startsWith("data:"))).toEqual([]);
    await screenshot(page, "api-reference-top");
  });

  it("navigates from the sidebar to the merchant API's operations, with examples, and to the admin API", async () => {
    const nav = (href: string) => page.locator(`.references-sidebar a[href="${href}"]`).click();
    const heading = (name: string) => page.locator("h3").filter({ hasText: name }).first();
    await nav("#tag/merchant-api");
    await page.waitForFunction(() => document.location.hash === "#tag/merchant-api");
    await heading("Create a payment").waitFor({ timeout: 30_000 });
    // The operations' own entries open under the tag, the create first.
    const merchantLinks = await sidebar();
    expect(merchantLinks.find((l: string) => l.includes("#tag/merchant-api/"))).toMatch(
      /^Create a payment\n[\s\S]*→ #tag\/merchant-api\/POST\/v1\/payment$/,
    );
    // The create's request example, as the document gives it, in its code sample.
    await heading("Create a payment").scrollIntoViewIfNeeded();
    await page.getByText("order-1001").filter({ visible: true }).first().waitFor({ timeout: 30_000 });
    await screenshot(page, "api-reference-merchant");

    await nav("#tag-group/admin-api");
    await nav("#tag/admin-accounts");
    await page.waitForFunction(() => document.location.hash === "#tag/admin-accounts");
    await heading("Create a merchant").waitFor({ timeout: 30_000 });
    expect(requests.filter((url) => !url.startsWith(origin) && !url.startsWith("data:"))).toEqual([]);
  });
});
