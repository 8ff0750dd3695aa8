import { editAmountIncrementally, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fitsWidth,
  launchBrowser,
  lowestContrast,
  newContext,
  screenshot,
  tabOrder,
  unlabelledControls,
  type ViewportName,
} from "../../src/browser.ts";
import { Operator, paymentBody, send, type TestShop } from "../../src/gateway.ts";
import { startTestStack, type TestStack } from "../../src/stack.ts";

// The payer's hosted page in a real browser (Debian's Chromium), against the whole
// stack: a provider payment that needs a receipt walked to each page outcome (paid,
// under review, declined, expired), a provider payment followed live to paid, the
// not-found page, and the page's headers. Screenshots at a phone and a desktop width.

/** The requisites the generated receipts show (`@gw/testkit/receipts`' defaults). */
const REQUISITES = { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" };
const AMOUNT = "1500.00";

describe("the payer's hosted page in a browser", () => {
  let stack: TestStack;
  let operator: Operator;
  let browser: Browser;
  /** A provider that requires a receipt; hosted page on. */
  let receiptShop: TestShop;
  /** A provider that requires a receipt with requisites valid for 4 s. */
  let shortShop: TestShop;
  /** A provider that settles by itself (no receipt). */
  let plainShop: TestShop;
  /** Hosted page off. */
  let noPageShop: TestShop;

  beforeAll(async () => {
    stack = await startTestStack({ extraEnv: { RECONCILE_INTERVAL_MS: "1000" } });
    operator = new Operator(stack);
    const via = (p: string) => ({ WT_RUB_C2C: { payin: [p], payout: [p], settlement_currency: "RUB" } });
    const rcpt = await operator.provider("rcpt", {
      payin: { mode: "accept", receipt_required: true, expires_in_seconds: 1800, requisites: REQUISITES },
    });
    const short = await operator.provider("short", {
      payin: { mode: "accept", receipt_required: true, expires_in_seconds: 4, requisites: REQUISITES },
    });
    const plain = await operator.provider("plain", {
      payin: { mode: "accept", expires_in_seconds: 900, requisites: REQUISITES },
    });
    receiptShop = await operator.newShop({ name: "receipt", routes: via(rcpt), hostedPage: true });
    shortShop = await operator.newShop({ name: "short", routes: via(short), hostedPage: true });
    plainShop = await operator.newShop({ name: "plain", routes: via(plain), hostedPage: true });
    noPageShop = await operator.newShop({ name: "nopage", routes: via(plain), hostedPage: false });
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    for (const s of [receiptShop, shortShop, plainShop, noPageShop]) await s?.receiver.stop();
    await stack?.stop();
  });

  /** A hosted link of `shop`; returns its payment_url. */
  async function link(shop: TestShop): Promise<string> {
    const res = await shop.api.link(paymentBody({ amount: AMOUNT }));
    expect(res.status).toBe(200);
    expect(res.json.payment_url).toMatch(new RegExp(`^${stack.urls.pay}/`));
    return res.json.payment_url as string;
  }

  /** Opens `url` at a viewport; checks every request stayed on checkout's own origin. */
  async function open(url: string, viewport: ViewportName, locale = "en-US") {
    const { context, requests } = await newContext(browser, viewport, { locale });
    const page = await context.newPage();
    await page.goto(url);
    return {
      page,
      close: async () => {
        await context.close();
        expect(requests.filter((r) => !r.startsWith(`${stack.urls.pay}/`))).toEqual([]);
      },
    };
  }

  async function uploadReceipt(page: Page, name: string, buffer: Buffer, mimeType = "application/pdf") {
    await page.setInputFiles("#receipt", { name, mimeType, buffer });
    await page.getByRole("button", { name: /upload receipt/i }).click();
  }

  it("shows the amount, requisites with copy buttons, the time left and the steps, readable at both widths", async () => {
    const url = await link(receiptShop);
    for (const viewport of ["phone", "desktop"] as const) {
      const { page, close } = await open(url, viewport);
      await expect.poll(() => page.locator("#amount").textContent()).toContain("1,500.00");
      expect(await page.locator("#req-number").textContent()).toBe("2202 2012 3456 7890");
      expect(await page.locator("#req-name").textContent()).toBe(REQUISITES.holder_name);
      // The script shows the copy buttons and ticks the countdown.
      expect(await page.getByRole("button", { name: "Copy" }).count()).toBe(2);
      const first = await page.locator(".timer").textContent();
      await expect.poll(() => page.locator(".timer").textContent(), { timeout: 5_000 }).not.toBe(first);
      expect(await page.getByLabel(/Receipt of the transfer/).count()).toBe(1);
      expect(await unlabelledControls(page)).toEqual([]);
      expect(await fitsWidth(page)).toBe(true);
      const contrast = await lowestContrast(page);
      expect(contrast.ratio, `lowest contrast at "${contrast.text}"`).toBeGreaterThanOrEqual(4.5);
      // Focus order: the language switch, the copy buttons, the file, the upload button.
      expect(await tabOrder(page, 5)).toEqual([
        "a:Язык: русский",
        "button:Copy",
        "button:Copy",
        "input:Receipt of the transfer (PDF, up to 20 MB)",
        "button:Upload receipt",
      ]);
      await screenshot(page, "payer-awaiting-receipt");
      await close();
    }
  });

  it("says whom the payer pays, the time left, and links back to the shop, at 390 px", async () => {
    // Any page of ours stands in for the shop's own.
    const shopUrl = `${stack.urls.edge}/openapi.json?back-from=pay`;
    const set = await send("PUT", `${stack.urls.edge}/admin/v1/shops/${plainShop.shopId}/settings`, {
      headers: { authorization: `Bearer ${stack.adminToken}` },
      json: { display_name: "Кофейня «Зерно»", return_url: shopUrl },
    });
    expect(set.status).toBe(200);
    const url = await link(plainShop);
    const { context, requests } = await newContext(browser, "phone", { locale: "en-US" });
    const page = await context.newPage();
    await page.goto(url);
    expect(page.viewportSize()?.width).toBe(390);
    expect(await page.locator("#shop-name").textContent()).toBe("Кофейня «Зерно»");
    expect(await page.locator(".timer").textContent()).toMatch(/^\d+:\d{2}/);
    const back = page.getByRole("link", { name: "Back to Кофейня «Зерно»" });
    expect(await back.getAttribute("href")).toBe(shopUrl);
    expect(await back.getAttribute("rel")).toBe("noreferrer noopener");
    expect(await fitsWidth(page)).toBe(true);
    expect(await unlabelledControls(page)).toEqual([]);
    const contrast = await lowestContrast(page);
    expect(contrast.ratio, `lowest contrast at "${contrast.text}"`).toBeGreaterThanOrEqual(4.5);
    await screenshot(page, "payer-shop-name");
    await page.screenshot({ path: "/tmp/b30-payer-shop-390.png", fullPage: true });
    // The link works: it leads to the shop's address, with no referrer.
    const [res] = await Promise.all([page.waitForResponse((r) => r.url() === shopUrl), back.click()]);
    expect(res.status()).toBeLessThan(400);
    expect(await res.request().headerValue("referer")).toBeNull();
    expect(page.url()).toBe(shopUrl);
    await context.close();
    expect(requests.filter((r) => !r.startsWith(`${stack.urls.pay}/`) && r !== shopUrl)).toEqual([]);
  });

  it("copies the card number with its button", async () => {
    const url = await link(receiptShop);
    const { context } = await newContext(browser, "desktop");
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.urls.pay });
    const page = await context.newPage();
    await page.goto(url);
    await page.getByRole("button", { name: "Copy" }).first().click();
    await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(REQUISITES.card_number);
    await context.close();
  });

  it("refuses a file that is not a PDF with a clear message, then completes with a genuine receipt: paid", async () => {
    const url = await link(receiptShop);
    const { page, close } = await open(url, "phone");
    await uploadReceipt(page, "photo.jpg", Buffer.from("\xff\xd8\xff\xe0 not a pdf"), "image/jpeg");
    await expect.poll(() => page.locator("#upload-error").textContent()).toContain("This file is not a PDF");
    expect(await page.locator("#receipt").getAttribute("aria-invalid")).toBe("true");
    await screenshot(page, "payer-wrong-file");

    await uploadReceipt(page, "receipt.pdf", Buffer.from(await receiptPdf(receiptSpec("sberbank", "card"))));
    await expect.poll(() => page.locator("h1").textContent(), { timeout: 20_000 }).toBe("Payment received");
    expect(await page.getByText("Amount received").textContent()).toContain("1,500.00");
    await screenshot(page, "payer-paid");
    await close();
    const desktop = await open(url, "desktop");
    expect(await desktop.page.locator("h1").textContent()).toBe("Payment received");
    await screenshot(desktop.page, "payer-paid");
    await desktop.close();
  });

  it("shows a forged receipt as under review", async () => {
    const url = await link(receiptShop);
    const { page, close } = await open(url, "desktop");
    const forged = await editAmountIncrementally(
      receiptSpec("sberbank", "card", { amount: "150.00" }),
      "1 500,00 ₽",
    );
    await uploadReceipt(page, "receipt.pdf", Buffer.from(forged));
    await expect
      .poll(() => page.locator("h1").textContent(), { timeout: 20_000 })
      .toBe("Payment under review");
    await screenshot(page, "payer-under-review");
    await close();
    const phone = await open(url, "phone");
    await screenshot(phone.page, "payer-under-review");
    await phone.close();
  });

  it("shows a receipt of a failed transfer as declined, in Russian for a Russian browser", async () => {
    const url = await link(receiptShop);
    const { page, close } = await open(url, "phone", "ru-RU");
    expect(await page.locator("html").getAttribute("lang")).toBe("ru");
    expect(await page.locator("#amount").textContent()).toBe("1\u00a0500,00\u00a0₽");
    await page.setInputFiles("#receipt", {
      name: "чек.pdf",
      mimeType: "application/pdf",
      buffer: Buffer.from(await receiptPdf(receiptSpec("vtb", "card", { status: "failed" }))),
    });
    await page.getByRole("button", { name: "Загрузить чек" }).click();
    await expect.poll(() => page.locator("h1").textContent(), { timeout: 20_000 }).toBe("Платёж отклонён");
    await screenshot(page, "payer-declined-ru");
    await close();
    const desktop = await open(url, "desktop");
    expect(await desktop.page.locator("h1").textContent()).toBe("Payment declined");
    await screenshot(desktop.page, "payer-declined");
    await desktop.close();
  });

  it("follows an unpaid payment live until it expires", async () => {
    const url = await link(shortShop);
    const { page, close } = await open(url, "phone");
    expect(await page.locator("h1").textContent()).toBe("Amount to pay");
    // The countdown reaches zero, then the reconciler expires the payment and the page follows.
    await expect.poll(() => page.locator("h1").textContent(), { timeout: 30_000 }).toBe("Payment expired");
    await screenshot(page, "payer-expired");
    await close();
    const desktop = await open(url, "desktop");
    await screenshot(desktop.page, "payer-expired");
    await desktop.close();
  });

  it("follows a provider payment live from waiting to paid", async () => {
    const url = await link(plainShop);
    const operationId = new URL(url).pathname.slice(1);
    const { page, close } = await open(url, "desktop");
    expect(await page.getByText("Waiting for your payment").count()).toBe(1);
    expect(await page.locator("#receipt").count()).toBe(0);
    await screenshot(page, "payer-awaiting-payment");
    await operator.settle(operationId, { legs: [AMOUNT] });
    await expect.poll(() => page.locator("h1").textContent(), { timeout: 20_000 }).toBe("Payment received");
    await close();
  });

  it("answers the same plain not-found page for a shop without the hosted page and for an unknown id", async () => {
    const res = await noPageShop.api.link(paymentBody({ amount: AMOUNT }));
    expect(res.json.payment_url).toBeNull();
    const texts: string[] = [];
    for (const id of [res.json.operation_id, "0190b2a4-6f0e-7000-8000-000000000001", "nothing"]) {
      const { page, close } = await open(`${stack.urls.pay}/${id}`, "phone");
      expect(await page.locator("h1").textContent()).toBe("Payment not found");
      texts.push(await page.locator("main").innerHTML());
      if (id === "nothing") await screenshot(page, "payer-not-found");
      await close();
    }
    expect(new Set(texts).size).toBe(1);
  });

  it("sends a strict content security policy and no referrer", async () => {
    const res = await fetch(await link(receiptShop));
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
  });
});
