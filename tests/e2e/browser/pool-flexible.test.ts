import { readFileSync } from "node:fs";
import { receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fitsWidth, launchBrowser, newContext, screenshot, unlabelledControls } from "../../src/browser.ts";
import { newMop, Operator, type TestShop } from "../../src/gateway.ts";
import { pollUntil } from "../../src/merchant.ts";
import { startTestStack, type TestStack } from "../../src/stack.ts";

// The self-matching pool on the payer's page, in Debian's Chromium against the whole
// stack: a pool payment paid with a receipt upload, and the amount picker of flexible
// links through every case (wrong k, one amount field, a list of ranges, an amount
// taken meanwhile, an expired link). The pool is shared by the stack, so each case uses
// amounts (and link bounds) that only its own payouts can serve.

/** The requisites the generated receipts show (`@gw/testkit/receipts`' defaults). */
const CARD = { number: "2202201234567890", name: "Иван Иванович Иванов" };
const PHONE = { number: "+79001234567", name: "Иван Иванович Иванов", bankname: "sberbank" };
/** Long enough to act on a link, short enough to watch one expire. */
const LINK_LIFETIME_MS = 25_000;

describe("pool payments and flexible links in a browser", () => {
  let stack: TestStack;
  let operator: Operator;
  let browser: Browser;
  /** Payouts go into the pool first; it holds the liquidity. */
  let liquidity: TestShop;
  /** Payins only through the pool; hosted page on. */
  let pool: TestShop;
  /** Flexible links with one amount field. */
  let amountShop: TestShop;
  /** Flexible links with a list of ranges. */
  let rangesShop: TestShop;
  const shops = () => [liquidity, pool, amountShop, rangesShop];
  /** Every link credential handed out, to check that no service logged one. */
  const credentials: string[] = [];

  beforeAll(async () => {
    stack = await startTestStack({ extraEnv: { FLEXIBLE_LINK_LIFETIME_MS: String(LINK_LIFETIME_MS) } });
    operator = new Operator(stack);
    const provider = await operator.provider("acc", {
      payin: { mode: "accept" },
      payout: { mode: "accept" },
    });
    const both = (route: { payin: string[]; payout: string[] }) => ({
      WT_RUB_C2C: { ...route, settlement_currency: "RUB" },
      WT_RUB_PHONE: { ...route, settlement_currency: "RUB" },
    });
    liquidity = await operator.newShop({
      name: "liquidity",
      routes: both({ payin: [provider], payout: ["self_matching", provider] }),
    });
    await operator.adjust(liquidity.shopId, "RUB", "100000.00", "pool liquidity");
    const payinViaPool = both({ payin: ["self_matching"], payout: [provider] });
    pool = await operator.newShop({ name: "pool", routes: payinViaPool, hostedPage: true });
    amountShop = await operator.newShop({ name: "amount", routes: payinViaPool, hostedPage: true });
    rangesShop = await operator.newShop({ name: "ranges", routes: payinViaPool, hostedPage: true });
    for (const [shop, picker] of [
      [amountShop, "amount"],
      [rangesShop, "ranges"],
    ] as const) {
      const res = await operator.admin("PUT", `/shops/${shop.shopId}/settings`, {
        flexible_link_enabled: true,
        flexible_picker: picker,
      });
      expect(res.status).toBe(200);
    }
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    for (const s of shops()) await s?.receiver.stop();
    await stack?.stop();
  });

  /** A payout of the liquidity shop, waiting in the pool. */
  async function poolPayout(amount: string, method: "WT_RUB_C2C" | "WT_RUB_PHONE") {
    const res = await liquidity.api.payout({
      merchant_operation_id: newMop("out"),
      client_id: "payee",
      method,
      amount,
      currency: "RUB",
      ...(method === "WT_RUB_C2C" ? CARD : PHONE),
    });
    expect(res.status, res.text).toBe(200);
  }

  async function flexibleLink(shop: TestShop, body: Record<string, string>) {
    const res = await shop.api.post("/payment/link/flexible", {
      merchant_operation_id: newMop("flex"),
      client_id: "payer",
      method: "WT_RUB_PHONE",
      currency: "RUB",
      ...body,
    });
    expect(res.status, res.text).toBe(200);
    const k = res.json.payment_url ? new URL(res.json.payment_url).searchParams.get("k") : null;
    if (k) credentials.push(k);
    return res.json as {
      operation_id: string;
      status: string;
      payment_url: string | null;
      expires_at?: string;
    };
  }

  async function open(url: string, viewport: "phone" | "desktop" = "phone") {
    const { context, requests } = await newContext(browser, viewport);
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

  it("walks a pool payment from the payout's requisites to paid with a receipt upload", async () => {
    await poolPayout("1500.00", "WT_RUB_C2C");
    const res = await pool.api.link({
      merchant_operation_id: newMop(),
      client_id: "payer",
      method: "WT_RUB_C2C",
      amount: "1500.00",
      currency: "RUB",
    });
    expect(res.json.status, res.text).toBe("awaiting_confirmation");
    for (const viewport of ["phone", "desktop"] as const) {
      const { page, close } = await open(res.json.payment_url, viewport);
      expect(await page.locator("#req-number").textContent()).toBe("2202 2012 3456 7890");
      expect(await page.locator("#req-name").textContent()).toBe(CARD.name);
      expect(await fitsWidth(page)).toBe(true);
      await screenshot(page, "pool-awaiting-receipt");
      await close();
    }
    const { page, close } = await open(res.json.payment_url, "phone");
    await page.setInputFiles("#receipt", {
      name: "receipt.pdf",
      mimeType: "application/pdf",
      buffer: Buffer.from(await receiptPdf(receiptSpec("sberbank", "card"))),
    });
    await page.getByRole("button", { name: /upload receipt/i }).click();
    await expect.poll(() => page.locator("h1").textContent(), { timeout: 20_000 }).toBe("Payment received");
    await screenshot(page, "pool-paid");
    await close();
  });

  it("answers not found for a flexible link without its k or with another k", async () => {
    await poolPayout("300.00", "WT_RUB_PHONE");
    await poolPayout("1000.00", "WT_RUB_PHONE");
    const link = await flexibleLink(amountShop, {
      recommended_amount: "950.00",
      min_amount: "100.00",
      max_amount: "1000.00",
    });
    expect(link.status).toBe("amount_selection");
    const url = new URL(link.payment_url!);
    const k = url.searchParams.get("k")!;
    for (const wrong of [
      `${stack.urls.pay}${url.pathname}`,
      `${stack.urls.pay}${url.pathname}?k=${k.slice(1)}x`,
    ]) {
      const { page, close } = await open(wrong);
      expect(await page.locator("h1").textContent()).toBe("Payment not found");
      await close();
    }
  });

  it("offers one amount field, refuses an amount not available, and creates the payment at the chosen amount", async () => {
    const link = await flexibleLink(amountShop, {
      recommended_amount: "950.00",
      min_amount: "100.00",
      max_amount: "1000.00",
    });
    expect(link.status).toBe("amount_selection");
    const { page, close } = await open(link.payment_url!, "phone");
    expect(await page.locator("h1").textContent()).toBe("Choose the amount");
    expect(await page.getByLabel("Amount (RUB)").inputValue()).toBe("900.00");
    expect(await page.locator("#amount-hint").textContent()).toContain("1,000.00");
    expect(await unlabelledControls(page)).toEqual([]);
    expect(await fitsWidth(page)).toBe(true);
    await screenshot(page, "flexible-amount-field");

    await page.getByLabel("Amount (RUB)").fill("950.00");
    await page.getByRole("button", { name: "Continue with this amount" }).click();
    await expect.poll(() => page.locator(".notice").textContent()).toContain("choose again");
    await screenshot(page, "flexible-amount-unavailable");

    await page.getByLabel("Amount (RUB)").fill("1000.00");
    await page.getByRole("button", { name: "Continue with this amount" }).click();
    await expect.poll(() => page.locator("#amount").textContent(), { timeout: 20_000 }).toContain("1,000.00");
    expect(await page.locator("#req-number").textContent()).toBe(PHONE.number);
    await screenshot(page, "flexible-created");
    await close();
    const desktop = await open(link.payment_url!, "desktop");
    expect(await desktop.page.locator("#req-number").textContent()).toBe(PHONE.number);
    await screenshot(desktop.page, "flexible-created");
    await desktop.close();

    // The payment exists now, at the chosen amount, not the recommended one.
    const state = await amountShop.api.state({ operation_id: link.operation_id });
    expect(state.json).toMatchObject({ status: "awaiting_confirmation", expected_amount: "1000.00" });
  });

  it("offers a list of ranges and refreshes the choice when the amount was taken meanwhile", async () => {
    await poolPayout("2500.00", "WT_RUB_PHONE");
    await poolPayout("2200.00", "WT_RUB_PHONE");
    const link = await flexibleLink(rangesShop, {
      recommended_amount: "2600.00",
      min_amount: "2000.00",
      max_amount: "3000.00",
    });
    expect(link.status).toBe("amount_selection");
    const { page, close } = await open(link.payment_url!, "desktop");
    const offers = await page
      .locator("input[type=radio]")
      .evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
    expect(offers).toEqual(["2500.00", "2400.00"]);
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshot(page, "flexible-ranges");
    const phone = await open(link.payment_url!, "phone");
    await screenshot(phone.page, "flexible-ranges");
    await phone.close();

    // Another payer takes 2500.00 while this one is choosing.
    const taker = await pool.api.payment({
      merchant_operation_id: newMop(),
      client_id: "other-payer",
      method: "WT_RUB_PHONE",
      amount: "2500.00",
      currency: "RUB",
    });
    expect(taker.json.status, taker.text).toBe("awaiting_confirmation");

    await page.getByLabel(/2,500\.00/).check();
    await page.getByRole("button", { name: "Continue with this amount" }).click();
    await expect.poll(() => page.locator(".notice").textContent()).toContain("just taken");
    const refreshed = await page
      .locator("input[type=radio]")
      .evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
    expect(refreshed).toEqual(["2200.00", "2100.00"]);
    await screenshot(page, "flexible-ranges-taken");

    await page.getByLabel(/2,200\.00/).check();
    await page.getByRole("button", { name: "Continue with this amount" }).click();
    await expect.poll(() => page.locator("#amount").textContent(), { timeout: 20_000 }).toContain("2,200.00");
    await close();
    const state = await rangesShop.api.state({ operation_id: link.operation_id });
    expect(state.json.expected_amount).toBe("2200.00");
  });

  it("says an expired link has expired and creates nothing, also when confirmed from a page opened before", async () => {
    await poolPayout("4500.00", "WT_RUB_PHONE");
    const link = await flexibleLink(amountShop, {
      recommended_amount: "5000.00",
      min_amount: "4000.00",
      max_amount: "6000.00",
    });
    expect(link.status).toBe("amount_selection");
    const { page, close } = await open(link.payment_url!, "phone");
    expect(await page.locator("h1").textContent()).toBe("Choose the amount");
    // The link's lifetime passes while the page is open.
    await pollUntil(
      "the link to expire",
      async () => (await fetch(link.payment_url!)).status,
      (status) => status === 410,
      LINK_LIFETIME_MS + 15_000,
    );
    await page.getByLabel("Amount (RUB)").fill("4500.00");
    await page.getByRole("button", { name: "Continue with this amount" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Link expired");
    await screenshot(page, "flexible-expired");
    await close();
    const state = await amountShop.api.state({ operation_id: link.operation_id });
    expect(state.status).toBe(404);
  }, 90_000);

  it("never wrote a link credential into any service's log", () => {
    expect(credentials.length).toBeGreaterThan(3);
    const log = readFileSync(stack.logFile, "utf8");
    for (const k of credentials) expect(log).not.toContain(k);
  });
});
