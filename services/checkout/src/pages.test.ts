import { randomUUID } from "node:crypto";
import { createLogger } from "@gw/log";
import { type OperationsHarness, startHarness } from "@gw/operations/testing";
import { notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCheckoutApp } from "./app.ts";

// The payer's page over the real operations service (with the real receipts, ledger and
// sandbox behind it), through `app.request()`.

let h: OperationsHarness;
let shop: { shopId: string; merchantId: string };
let app: ReturnType<typeof buildCheckoutApp>;

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  await h.provider("checkout", {
    mode: "accept",
    receipt_required: true,
    expires_in_seconds: 1800,
    requisites: { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" },
  });
  shop = await h.shop(["checkout"]);
  app = buildCheckoutApp({
    draining: () => false,
    pages: {
      operations: h.operations,
      logger: createLogger("checkout", "silent"),
      receiptMaxBytes: 1024 * 1024,
    },
  });
});
afterAll(() => h?.stop());

async function aPayment(hostedPage = true, amount = "1500.00") {
  const { operation } = await h.operations.createOperation({
    scope: shop,
    type: "payment",
    merchantOperationId: `mop-${randomUUID()}`,
    clientId: "client-1",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
    hostedPage,
  });
  return operation!;
}

async function upload(operationId: string, file: Uint8Array, name = "receipt.pdf", json = false) {
  const form = new FormData();
  form.set("receipt", new File([Buffer.from(file)], name, { type: "application/pdf" }));
  // The multipart bytes, encoded once: an in-process request over undici's own FormData
  // stream can have that stream enqueue after it closed, an unhandled rejection outside
  // any test (over HTTP the body arrives as the socket's bytes).
  const encoded = new Response(form);
  return app.request(`/${operationId}/receipt?lang=en`, {
    method: "POST",
    body: await encoded.arrayBuffer(),
    headers: {
      "content-type": encoded.headers.get("content-type") ?? "",
      ...(json ? { accept: "application/json" } : {}),
    },
  });
}

describe("the payer's page", () => {
  it("says whom the payer pays and links back to the shop once the shop has them (PutShopPage)", async () => {
    const before = await (await app.request(`/${(await aPayment()).operationId}?lang=en`)).text();
    expect(before).not.toContain("You are paying");
    expect(before).not.toContain('id="return-link"');
    await h.operations.putShopPage({
      shopId: shop.shopId,
      displayName: "Coffee <Beans> & Co",
      returnUrl: "https://shop.example.test/orders/42?from=pay",
    });
    const op = await aPayment();
    const page = await (await app.request(`/${op.operationId}?lang=en`)).text();
    expect(page).toContain('You are paying: <strong id="shop-name">Coffee &lt;Beans&gt; &amp; Co</strong>');
    expect(page).toContain(
      '<a id="return-link" href="https://shop.example.test/orders/42?from=pay" rel="noreferrer noopener">Back to Coffee &lt;Beans&gt; &amp; Co</a>',
    );
    // Only http(s): anything else is refused when set, and the page would not link it.
    await expect(
      h.operations.putShopPage({ shopId: shop.shopId, returnUrl: "javascript:alert(1)" }),
    ).rejects.toThrow(/return_url/);
    // An empty value clears it.
    await h.operations.putShopPage({ shopId: shop.shopId, returnUrl: "" });
    const cleared = await (await app.request(`/${op.operationId}?lang=en`)).text();
    expect(cleared).not.toContain('id="return-link"');
    expect(cleared).toContain("Coffee &lt;Beans&gt; &amp; Co");
    const stored = await h.operations.getShopPage({ shopId: shop.shopId });
    expect(stored.displayName).toBe("Coffee <Beans> & Co");
    expect(stored.returnUrl).toBeUndefined();
    await h.operations.putShopPage({ shopId: shop.shopId, displayName: "" });
  });

  it("escapes a merchant's display name and return link, in text and in an attribute", async () => {
    const url = `https://shop.example.test/back?to="><script>alert(2)</script>&n='1'`;
    await h.operations.putShopPage({
      shopId: shop.shopId,
      displayName: "<script>alert(1)</script>",
      returnUrl: url,
    });
    const op = await aPayment();
    const page = await (await app.request(`/${op.operationId}?lang=en`)).text();
    expect(page).not.toContain("<script>alert(");
    expect(page).toContain('<strong id="shop-name">&lt;script&gt;alert(1)&lt;/script&gt;</strong>');
    expect(page).toContain(
      `<a id="return-link" href="https://shop.example.test/back?to=&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;&amp;n=&#39;1&#39;" rel="noreferrer noopener">`,
    );
    await h.operations.putShopPage({ shopId: shop.shopId, displayName: "", returnUrl: "" });
  });

  it("shows the amount, the requisites with copy buttons, the time left and the upload form", async () => {
    const op = await aPayment();
    const res = await app.request(`/${op.operationId}?lang=en`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("1,500.00");
    expect(page).toContain("2202 2012 3456 7890");
    expect(page).toContain('data-copy="2202201234567890"');
    expect(page).toContain("Иван Иванович Иванов");
    expect(page).toContain(`data-expires="${op.expiresAt}"`);
    expect(page).toContain('<label for="receipt">');
    expect(page).toMatch(/<html lang="en">/);
  });

  it("speaks Russian to a browser that prefers it", async () => {
    const op = await aPayment();
    const res = await app.request(`/${op.operationId}`, { headers: { "accept-language": "ru" } });
    const page = await res.text();
    expect(page).toMatch(/<html lang="ru">/);
    expect(page).toContain("1\u00a0500,00\u00a0₽");
    expect(page).toContain("Загрузите чек");
  });

  it("answers the same not-found page for a payment without the hosted page, an unknown id and a bad id", async () => {
    const op = await aPayment(false);
    const pages = await Promise.all(
      [`/${op.operationId}`, `/${randomUUID()}`, "/not-a-uuid"].map(async (path) => {
        const res = await app.request(`${path}?lang=en`);
        return { status: res.status, text: await res.text() };
      }),
    );
    for (const p of pages) expect(p).toEqual({ status: 404, text: pages[0]!.text });
    expect((await app.request(`/${op.operationId}/state`)).status).toBe(404);
  });

  it("refuses a file that is not a PDF with a clear message and sends nothing for review", async () => {
    const op = await aPayment();
    const res = await upload(op.operationId, notPdf(), "photo.jpg");
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("This file is not a PDF");
    const json = await upload(op.operationId, new Uint8Array(0), "empty.pdf", true);
    expect(json.status).toBe(400);
    expect(((await json.json()) as { message: string }).message).toContain("empty");
    const { page } = await h.operations.getPaymentPage({ operationId: op.operationId });
    expect(page?.outcome).toBe("awaiting_receipt");
  });

  it("refuses a file over the limit before reading it", async () => {
    const op = await aPayment();
    const res = await upload(op.operationId, new Uint8Array(2 * 1024 * 1024).fill(37), "big.pdf");
    expect(res.status).toBe(413);
    expect(await res.text()).toContain("too large");
  });

  it("takes a genuine receipt, then shows the payment as paid with the amount that arrived", async () => {
    const op = await aPayment();
    const res = await upload(op.operationId, await receiptPdf(receiptSpec("sberbank", "card")));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/${op.operationId}?lang=en`);
    const state = await app.request(`/${op.operationId}/state`);
    expect(await state.json()).toEqual({ outcome: "paid" });
    const page = await (await app.request(`/${op.operationId}?lang=en`)).text();
    expect(page).toContain("Payment received");
    expect(page).not.toContain('<input type="file"');
    const again = await upload(
      op.operationId,
      await receiptPdf(receiptSpec("sberbank", "card")),
      "r.pdf",
      true,
    );
    expect(again.status).toBe(409);
  });
});
