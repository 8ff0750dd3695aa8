import { randomBytes } from "node:crypto";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import { editAmountIncrementally, receiptSpec } from "@gw/testkit/receipts";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fitsWidth,
  launchBrowser,
  lowestContrast,
  newContext,
  screenshot,
  unlabelledControls,
} from "../../src/browser.ts";
import { MerchantApi, newMop, paymentBody, send } from "../../src/gateway.ts";
import { pollUntil } from "../../src/merchant.ts";
import { startTestStack, type TestStack } from "../../src/stack.ts";

// An operator in the back office, in Debian's Chromium against the whole stack: logs in
// with the admin token, sets up a merchant and a shop (provider, route, pricing,
// settings with a webhook, FX rate) through the forms, issues an API key (shown once,
// copied with its button) and revokes it, reviews a payment in manual check with the
// receipt beside the requisites, redelivers a webhook and reads the balance.

const REQUISITES = { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" };

describe("the operator's back office in a browser", () => {
  let stack: TestStack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: WebhookReceiver;
  let requests: string[];
  let shopPath = "";
  let apiKey = "";
  /** The payment approved in the manual check: found again by either id later. */
  let approved = { id: "", mop: "" };

  beforeAll(async () => {
    stack = await startTestStack();
    receiver = await startWebhookReceiver({ secret: () => undefined, status: () => 204 });
    browser = await launchBrowser();
    ({ context, requests } = await newContext(browser, "desktop"));
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.urls.backoffice });
    page = await context.newPage();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await receiver?.stop();
    await stack?.stop();
  });

  const backoffice = (path = "") => `${stack.urls.backoffice}/backoffice${path}`;
  const notice = () => page.locator(".notice").textContent();
  const submit = (section: string, button: string) =>
    page.locator(`section:has(#${section})`).getByRole("button", { name: button }).click();

  it("asks for the admin token before anything, and refuses a wrong one", async () => {
    await page.goto(backoffice());
    expect(new URL(page.url()).pathname).toBe("/backoffice/login");
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshot(page, "backoffice-login");
    await page.getByLabel("Admin token").fill("x".repeat(40));
    await page.getByRole("button", { name: "Log in" }).click();
    expect(await page.locator(".alert").textContent()).toBe("That is not the admin token.");
    await page.getByLabel("Admin token").fill(stack.adminToken);
    await page.getByRole("button", { name: "Log in" }).click();
    expect(await page.locator("h1").textContent()).toBe("Merchants and shops");
    const cookie = (await context.cookies()).find((c) => c.name === "gw_backoffice");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
  });

  it("sets up a merchant, a shop, its provider, route, pricing, settings and an FX rate through the forms", async () => {
    await page.getByLabel("Merchant name").fill("Browser Merchant");
    await page.getByRole("button", { name: "Create merchant" }).click();
    expect(await notice()).toBe("Merchant created.");
    await page.getByLabel("Shop name").fill("Browser Shop");
    await page.getByRole("button", { name: "Create shop" }).click();
    expect(await notice()).toBe("Shop created.");
    shopPath = new URL(page.url()).pathname;
    expect(shopPath).toMatch(/^\/backoffice\/shops\/[0-9a-f-]{36}$/);

    // The provider: its behaviour at the sandbox, its registration in the back office.
    const name = `rcpt-${randomBytes(3).toString("hex")}`;
    const credentials = randomBytes(24).toString("base64url");
    const sandbox = await send("PUT", `${stack.urls.sandbox}/control/providers/${name}`, {
      json: {
        credentials,
        payin: { mode: "accept", receipt_required: true, expires_in_seconds: 1800, requisites: REQUISITES },
      },
    });
    expect(sandbox.status).toBe(200);
    await page.goto(backoffice("/config"));
    await page.getByLabel("Name", { exact: true }).fill(name);
    await page.getByLabel("Base URL").fill(stack.urls.sandbox);
    await page.getByLabel("Credentials").fill(credentials);
    await page.getByRole("button", { name: "Save provider" }).click();
    expect(await notice()).toBe("Provider saved.");
    // Listed back with its kind, base URL and methods; the credentials never.
    expect(await page.locator("section:has(#providers)").textContent()).toContain(name);
    const listed = page.locator("section:has(#providers) tbody tr", { hasText: name });
    expect(await listed.locator("td").nth(1).textContent()).toBe("sandbox");
    expect(await listed.locator("td").nth(2).textContent()).toBe(stack.urls.sandbox);
    expect(await page.content()).not.toContain(credentials);
    await page.getByLabel("Rate", { exact: true }).fill("92.500000");
    await page.getByRole("button", { name: "Save rate" }).click();
    expect(await notice()).toBe("FX rate saved.");
    await screenshot(page, "backoffice-config");

    await page.goto(`${stack.urls.backoffice}${shopPath}`);
    await page.getByLabel("Payin providers, in order (comma-separated)").fill(name);
    await page.getByLabel("Payout providers, in order (comma-separated)").fill(name);
    await submit("routes", "Save route");
    expect(await notice()).toBe("Route saved.");
    await submit("pricing", "Save pricing");
    expect(await notice()).toBe("Pricing saved.");
    // The current route and pricing are shown, and the forms start from them.
    const route = page.locator("section:has(#routes) tbody tr", { hasText: "WT_RUB_C2C" });
    expect(await route.locator("td").nth(1).textContent()).toBe(name);
    expect(await route.locator("td").nth(3).textContent()).toBe("RUB");
    expect(await page.getByLabel("Payin providers, in order (comma-separated)").inputValue()).toBe(name);
    const tiers = page.locator("section:has(#pricing) tbody tr", { hasText: "WT_RUB_C2C" });
    expect(await tiers.locator("td").nth(1).textContent()).toBe("2.5% + 0 (0.01–10000000)");
    expect(await page.getByLabel("Percent").first().inputValue()).toBe("2.5");
    await page.getByLabel("Hosted payment page").check();
    await page.getByLabel("Webhook URL").fill(receiver.url);
    await submit("settings", "Save settings");
    // The first webhook URL comes with the signing secret, shown once.
    expect(await page.locator(".secret").textContent()).toContain("Webhook signing secret");
  });

  it("issues an API key shown once with a copy button, which works until it is revoked", async () => {
    await page.goto(`${stack.urls.backoffice}${shopPath}`);
    await page.getByRole("button", { name: "Issue a new key" }).click();
    apiKey = (await page.locator("#new-key").textContent()) ?? "";
    expect(apiKey.length).toBeGreaterThan(20);
    await page.locator(".secret").getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(apiKey);
    await screenshot(page, "backoffice-key-issued");
    expect((await new MerchantApi(stack.urls.edge, apiKey).balances()).status).toBe(200);

    // A second key to revoke; the page never shows a plaintext again.
    await page.getByRole("button", { name: "Issue a new key" }).click();
    const second = (await page.locator("#new-key").textContent()) ?? "";
    await page.goto(`${stack.urls.backoffice}${shopPath}`);
    expect(await page.content()).not.toContain(second);
    expect(await page.content()).not.toContain(apiKey);
    await page.getByRole("button", { name: `Revoke key ${second.slice(0, 12)}` }).click();
    expect(await notice()).toBe("Key revoked.");
    expect((await new MerchantApi(stack.urls.edge, second).balances()).status).toBe(401);
    expect((await new MerchantApi(stack.urls.edge, apiKey).balances()).status).toBe(200);
  });

  it("reviews a payment in manual check with the receipt beside the requisites, approving it with the amount", async () => {
    const api = new MerchantApi(stack.urls.edge, apiKey);
    const mop = newMop();
    const created = await api.link(paymentBody({ amount: "1500.00", merchant_operation_id: mop }));
    expect(created.json.status, created.text).toBe("awaiting_confirmation");
    const operationId = created.json.operation_id as string;
    approved = { id: operationId, mop };
    const forged = await editAmountIncrementally(
      receiptSpec("sberbank", "card", { amount: "150.00" }),
      "1 500,00 ₽",
    );
    const form = new FormData();
    form.set("operation_id", operationId);
    form.set("confirmation_type", "receipt");
    form.set("receipt", new File([Buffer.from(forged)], "receipt.pdf", { type: "application/pdf" }));
    const confirmed = await fetch(`${stack.urls.edge}/v1/confirm_payment`, {
      method: "POST",
      headers: { "x-api-key": apiKey },
      body: form,
    });
    expect(((await confirmed.json()) as { status: string }).status).toBe("manual_check");

    const receiptPath = `/backoffice/reviews/${operationId}/receipt`;
    const framed = page.waitForResponse((r) => new URL(r.url()).pathname === receiptPath);
    await page.goto(backoffice("/reviews"));
    const card = page.locator(`section:has(#mc-${operationId})`);
    // The receipt itself, embedded beside the requisites from a same-origin URL.
    expect(await card.locator("iframe.receipt").getAttribute("src")).toBe(receiptPath);
    const file = await framed;
    expect(file.status()).toBe(200);
    const fetched = await page.request.get(`${stack.urls.backoffice}${receiptPath}`);
    expect(fetched.headers()["content-type"]).toBe("application/pdf");
    expect(fetched.headers()["content-disposition"]).toMatch(/^inline; /);
    expect(fetched.headers()["content-security-policy"]).toBe(
      "default-src 'none'; sandbox; frame-ancestors 'self'",
    );
    expect(Buffer.from(await fetched.body()).equals(Buffer.from(forged))).toBe(true);
    expect(await card.getByText("Requisites shown to the payer").count()).toBe(1);
    expect(await card.locator("dd", { hasText: REQUISITES.card_number }).count()).toBe(1);
    expect(await card.getByText("incremental_update").count()).toBeGreaterThan(0);
    expect(await card.locator("dt", { hasText: "Amount on the receipt" }).count()).toBe(1);
    expect(await unlabelledControls(page)).toEqual([]);
    const contrast = await lowestContrast(page);
    expect(contrast.ratio, `lowest contrast at "${contrast.text}"`).toBeGreaterThanOrEqual(4.5);
    await screenshot(page, "backoffice-manual-check");

    await card.getByLabel("Amount that arrived (with approve)").fill("1500.00");
    await card.getByLabel("Reason").fill("The bank confirmed the transfer by phone.");
    await card.getByLabel("Operator").fill("alice");
    await card.getByRole("button", { name: "Record decision" }).click();
    expect(await notice()).toBe("Payment approved.");
    const state = await api.state({ operation_id: operationId });
    expect(state.json).toMatchObject({ status: "completed", actual_amount: "1500.00" });
  });

  it("rejects a payment in manual check with a reason", async () => {
    const api = new MerchantApi(stack.urls.edge, apiKey);
    const created = await api.link(paymentBody({ amount: "1500.00", merchant_operation_id: newMop() }));
    const operationId = created.json.operation_id as string;
    const form = new FormData();
    form.set("operation_id", operationId);
    form.set("confirmation_type", "receipt");
    form.set(
      "receipt",
      new File(
        [
          Buffer.from(
            await editAmountIncrementally(
              receiptSpec("sberbank", "card", { amount: "150.00" }),
              "1 500,00 ₽",
            ),
          ),
        ],
        "receipt.pdf",
        { type: "application/pdf" },
      ),
    );
    await fetch(`${stack.urls.edge}/v1/confirm_payment`, {
      method: "POST",
      headers: { "x-api-key": apiKey },
      body: form,
    });
    await page.goto(backoffice("/reviews"));
    const card = page.locator(`section:has(#mc-${operationId})`);
    await card.getByLabel("Reject").check();
    await card.getByLabel("Reason").fill("The receipt was edited after issue.");
    await card.getByLabel("Operator").fill("alice");
    await card.getByRole("button", { name: "Record decision" }).click();
    expect(await notice()).toBe("Payment rejected.");
    expect((await api.state({ operation_id: operationId })).json.status).toBe("rejected");
  });

  it("shows the shop's webhook deliveries with redelivery and its balance, at both widths", async () => {
    await pollUntil(
      "deliveries of the completed payment",
      async () => receiver.received.length,
      (n) => n >= 2,
    );
    await page.goto(`${stack.urls.backoffice}${shopPath}`);
    const deliveries = page.locator("section:has(#deliveries) tbody tr");
    expect(await deliveries.count()).toBeGreaterThan(0);
    const before = receiver.received.length;
    await deliveries
      .first()
      .getByRole("button", { name: /Redeliver/ })
      .click();
    expect(await notice()).toBe("Redelivery scheduled.");
    await pollUntil(
      "the redelivery",
      async () => receiver.received.length,
      (n) => n > before,
    );
    const rub = page.locator("section:has(#balances) tbody tr", { hasText: "RUB" });
    // 1500.00 less 2.5 % commission.
    expect(await rub.locator("td").nth(1).textContent()).toBe("1462.50");
    await screenshot(page, "backoffice-shop");
    const phone = await newContext(browser, "phone");
    await phone.context.addCookies(await context.cookies());
    const small = await phone.context.newPage();
    await small.goto(`${stack.urls.backoffice}${shopPath}`);
    expect(await small.locator("h1").textContent()).toBe("Shop Browser Shop");
    expect(await fitsWidth(small)).toBe(true);
    await screenshot(small, "backoffice-shop");
    await small.goto(backoffice("/reviews"));
    await screenshot(small, "backoffice-reviews");
    await phone.context.close();
    expect(phone.requests.filter((r) => !r.startsWith(`${stack.urls.backoffice}/backoffice`))).toEqual([]);
  });

  it("finds the approved payment by its id and by the merchant's id, with its legs and webhooks, at both widths", async () => {
    for (const q of [approved.id, approved.mop]) {
      await page.goto(backoffice("/operations"));
      await page.getByLabel("Operation id or merchant operation id").fill(q);
      await page.getByRole("button", { name: "Find" }).click();
      const card = page.locator(`section:has(#op-${approved.id})`);
      expect(await card.locator("dd", { hasText: approved.mop }).count()).toBe(1);
      expect(await card.locator("h2").textContent()).toContain("completed");
      // The leg the operator approved, and the receipt proving it.
      const legs = card.getByRole("table", { name: `Legs of ${approved.id}` });
      expect(await legs.locator("tbody tr td").nth(2).textContent()).toBe("1500.00");
      expect(
        await card
          .getByRole("table", { name: `Receipts of ${approved.id}` })
          .locator("tbody tr")
          .count(),
      ).toBe(1);
      const hooks = card.getByRole("table", { name: `Webhook deliveries of ${approved.id}` });
      expect(await hooks.locator("tbody tr", { hasText: "payment.completed" }).count()).toBe(1);
    }
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshot(page, "backoffice-operation");
    await page.screenshot({ path: "/tmp/b30-backoffice-operation-1280.png", fullPage: true });
    const phone = await newContext(browser, "phone");
    await phone.context.addCookies(await context.cookies());
    const small = await phone.context.newPage();
    await small.goto(backoffice(`/operations?q=${encodeURIComponent(approved.mop)}`));
    expect(await small.locator(`#op-${approved.id}`).count()).toBe(1);
    expect(await fitsWidth(small)).toBe(true);
    await screenshot(small, "backoffice-operation");
    await small.screenshot({ path: "/tmp/b30-backoffice-operation-390.png", fullPage: true });
    await small.goto(backoffice(`?q=${encodeURIComponent("Browser Merchant")}`));
    expect(await small.locator("section:has(#list) tbody tr", { hasText: "Browser Merchant" }).count()).toBe(
      1,
    );
    expect(await small.getByLabel("Merchant or shop: name or id").inputValue()).toBe("Browser Merchant");
    expect(await fitsWidth(small)).toBe(true);
    await small.screenshot({ path: "/tmp/b30-backoffice-merchants-390.png", fullPage: true });
    await phone.context.close();
    await page.goto(backoffice());
    await page.screenshot({ path: "/tmp/b30-backoffice-merchants-1280.png", fullPage: true });
    await page.goto(`${stack.urls.backoffice}${shopPath}`);
    // The settings form starts from the current values: the webhook URL set above.
    expect(await page.getByLabel("Webhook URL").inputValue()).toBe(receiver.url);
    await page.screenshot({ path: "/tmp/b30-backoffice-shop-1280.png", fullPage: true });
  });

  it("loaded nothing from outside the back office and sent a strict CSP", async () => {
    // The browser's own PDF viewer (chrome:// and chrome-extension://) is not the network.
    const own = (r: string) => r.startsWith("chrome://") || r.startsWith("chrome-extension://");
    expect(requests.filter((r) => !own(r) && !r.startsWith(`${stack.urls.backoffice}/backoffice`))).toEqual(
      [],
    );
    const res = await fetch(backoffice("/login"));
    expect(res.headers.get("content-security-policy")).toMatch(/^default-src 'none';/);
    expect(res.headers.get("content-security-policy")).not.toMatch(/unsafe|https?:/);
  });

  it("ends the session on logout: a copy of the old cookie gets the login page", async () => {
    const copied = await context.cookies();
    await page.goto(backoffice());
    await page.getByRole("button", { name: "Log out" }).click();
    expect(new URL(page.url()).pathname).toBe("/backoffice/login");
    const other = await browser.newContext();
    await other.addCookies(copied);
    const stale = await other.newPage();
    await stale.goto(backoffice());
    expect(new URL(stale.url()).pathname).toBe("/backoffice/login");
    await stale.screenshot({ path: "/tmp/b30-backoffice-after-logout.png" });
    await other.close();
  });
});
