import { request } from "node:http";
import { Decimal } from "@gw/money";
import { ReceiptUrlSigner } from "@gw/receipts/signing";
import { editAmountIncrementally, notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceRow,
  errorOf,
  type HttpAnswer,
  Operator,
  paymentBody,
  send,
  type TestShop,
  webhooksOf,
} from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// Receipt confirmation over HTTP, as a merchant and an operator see it: a payment whose
// route requires a receipt, the payer's receipt uploaded to POST /v1/confirm_payment and
// reviewed by the receipts service, the webhooks, the balance, the signed receipt link,
// the operator's manual review, and the state read while the receipts service is down.

/** The storage limit of this stack: small, so an oversized upload is cheap to send. */
const RECEIPT_MAX_BYTES = 64 * 1024;
/** What the generated receipts show (`@gw/testkit/receipts`' defaults) and the provider hands out. */
const CARD = "2202201234567890";
const HOLDER = "Иван Иванович Иванов";

describe("receipt confirmation over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  /** Routes cards through a provider that requires a receipt. */
  let shop: TestShop;
  /** Another merchant's shop on the same route. */
  let other: TestShop;

  beforeAll(async () => {
    stack = await startTestStack({ extraEnv: { RECEIPT_STORE_MAX_BYTES: String(RECEIPT_MAX_BYTES) } });
    operator = new Operator(stack);
    const receipts = await operator.provider("rcpt", {
      payin: {
        mode: "accept",
        receipt_required: true,
        expires_in_seconds: 1800,
        requisites: { card_number: CARD, holder_name: HOLDER },
      },
    });
    const via = (...payin: string[]) => ({ payin, payout: payin, settlement_currency: "RUB" });
    shop = await operator.newShop({ name: "receipts", routes: { WT_RUB_C2C: via(receipts) } });
    other = await operator.newShop({ name: "other", routes: { WT_RUB_C2C: via(receipts) } });
  });

  afterAll(async () => {
    await shop?.receiver.stop();
    await other?.receiver.stop();
    await stack?.stop();
  });

  /** POSTs a multipart form to /v1/confirm_payment with the shop's key. */
  async function upload(
    as: TestShop,
    fields: { operation_id?: string; confirmation_type?: string; receipt?: Uint8Array },
  ): Promise<HttpAnswer> {
    const form = new FormData();
    if (fields.operation_id !== undefined) form.append("operation_id", fields.operation_id);
    if (fields.confirmation_type !== undefined) form.append("confirmation_type", fields.confirmation_type);
    if (fields.receipt !== undefined)
      form.append("receipt", new Blob([fields.receipt], { type: "application/pdf" }), "receipt.pdf");
    const res = await fetch(`${stack.urls.edge}/v1/confirm_payment`, {
      method: "POST",
      headers: { "x-api-key": as.apiKey },
      body: form,
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  }

  const confirm = (operationId: string, receipt: Uint8Array, as = shop) =>
    upload(as, { operation_id: operationId, confirmation_type: "receipt", receipt });

  /**
   * An upload over the limit, sent as a plain HTTP/1.1 request that keeps its answer: the
   * edge answers 413 from the declared length before reading the body, and may close the
   * connection while the client is still writing it. fetch then reports only the broken
   * pipe (EPIPE) and loses the answer that already arrived; this reads the answer and
   * ignores a write error that comes after it.
   */
  async function confirmOversized(operationId: string, receipt: Uint8Array): Promise<HttpAnswer> {
    const form = new FormData();
    form.append("operation_id", operationId);
    form.append("confirmation_type", "receipt");
    form.append("receipt", new Blob([receipt], { type: "application/pdf" }), "receipt.pdf");
    const encoded = new Response(form);
    const body = Buffer.from(await encoded.arrayBuffer());
    const url = new URL("/v1/confirm_payment", stack.urls.edge);
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = request(
        url,
        {
          method: "POST",
          headers: {
            "x-api-key": shop.apiKey,
            "content-type": encoded.headers.get("content-type") ?? "",
            "content-length": String(body.length),
          },
          timeout: 60_000,
        },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
            resolve({
              status: res.statusCode ?? 0,
              headers,
              text,
              json: text ? JSON.parse(text) : undefined,
            });
          });
        },
      );
      req.on("error", (err) => {
        if (!answered) reject(err);
      });
      req.end(body);
    });
  }

  /** A new payment of 1 500,00 awaiting its receipt. */
  async function awaiting(amount = "1500.00") {
    const res = await shop.api.payment(paymentBody({ amount }));
    expect(res.status).toBe(200);
    expect(res.json.status).toBe("awaiting_confirmation");
    return res.json as { operation_id: string; merchant_operation_id: string };
  }

  const genuine = () => receiptPdf(receiptSpec("sberbank", "card"));
  const forged = () =>
    editAmountIncrementally(receiptSpec("sberbank", "card", { amount: "150.00" }), "1 500,00 ₽");

  const webhook = (operationId: string, type: string) =>
    pollUntil(
      `the ${type} webhook`,
      async () => webhooksOf(shop.receiver, operationId, type)[0],
      (h) => h !== undefined,
    );

  let completedId: string;
  let receiptBytes: Uint8Array;
  let receiptUrl: string;

  it("announces a payment awaiting its receipt with a webhook at once", async () => {
    const op = await awaiting();
    const res = await shop.api.state({ operation_id: op.operation_id });
    expect(res.json).toMatchObject({
      status: "awaiting_confirmation",
      external_confirmation: { required: true, methods: ["receipt"] },
      number: CARD,
      receipts: [],
      receipt_evidence_status: "not_ready",
    });
    const hook = await webhook(op.operation_id, "payment.awaiting_confirmation");
    expect((hook!.body as { data: { status: string } }).data.status).toBe("awaiting_confirmation");
  });

  it("completes a payment with a genuine receipt: its amount, the webhook and the balance", async () => {
    const op = await awaiting();
    receiptBytes = await genuine();
    const res = await confirm(op.operation_id, receiptBytes);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      operation_id: op.operation_id,
      status: "completed",
      actual_amount: "1500.00",
      commission_amount: "37.50",
      settlement_amount: "1462.50",
    });
    expect(res.json).not.toHaveProperty("manual_check_reason");
    completedId = op.operation_id;

    const hook = await webhook(op.operation_id, "payment.completed");
    expect((hook!.body as { data: Record<string, unknown> }).data).toMatchObject({
      status: "completed",
      actual_amount: "1500.00",
    });
    const balances = await pollUntil(
      "the RUB balance to be credited",
      () => shop.api.balances(),
      (b) => !new Decimal(balanceRow(b, "RUB").balance).isZero(),
    );
    expect(new Decimal(balanceRow(balances, "RUB").balance).eq("1462.50")).toBe(true);
  });

  it("shows one receipt whose signed link downloads the same bytes, privately", async () => {
    const state = await shop.api.state({ operation_id: completedId });
    expect(state.status).toBe(200);
    expect(state.json.receipt_evidence_status).toBe("complete");
    expect(state.json.receipts).toHaveLength(1);
    const item = state.json.receipts[0];
    expect(item).toMatchObject({ amount: 1500 });
    receiptUrl = item.receipt_url;
    expect(receiptUrl.startsWith(`${stack.urls.edge}/receipts/`)).toBe(true);

    const download = await fetch(receiptUrl);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(receiptBytes))).toBe(true);
    expect(download.headers.get("content-type")).toBe("application/pdf");
    expect(download.headers.get("content-disposition")).toMatch(/^attachment;/);
    expect(download.headers.get("cache-control")).toBe("private, no-store");
    expect(download.headers.get("referrer-policy")).toBe("no-referrer");
  });

  it("refuses an altered link and another shop's with 404 and an expired one with 410", async () => {
    const url = new URL(receiptUrl);
    const sig = url.searchParams.get("sig")!;
    url.searchParams.set("sig", `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`);
    expect((await send("GET", url.toString())).status).toBe(404);
    const later = new URL(receiptUrl);
    later.searchParams.set("exp", String(Number(later.searchParams.get("exp")) + 3600));
    expect((await send("GET", later.toString())).status).toBe(404);

    const withOtherKey = await send("GET", receiptUrl, { headers: { "x-api-key": other.apiKey } });
    expect(withOtherKey.status).toBe(404);
    expect((await send("GET", receiptUrl, { headers: { "x-api-key": shop.apiKey } })).status).toBe(200);

    // A genuine link of this receipt, signed with the stack's secret an hour ago.
    const receiptId = new URL(receiptUrl).pathname.split("/").pop()!;
    const expired = new ReceiptUrlSigner(stack.receiptUrlSecret, stack.urls.edge, 300).sign(
      receiptId,
      shop.shopId,
      new Date(Date.now() - 3_600_000),
    );
    const gone = await send("GET", expired.url);
    expect(errorOf(gone)).toMatchObject({ status: 410, code: "receipt_url_expired" });
  });

  it("answers 412 not_awaiting_confirmation for a payment already completed, and 404 for another shop's", async () => {
    expect(errorOf(await confirm(completedId, await genuine()))).toEqual({
      status: 412,
      code: "not_awaiting_confirmation",
      field: undefined,
    });
    const op = await awaiting();
    expect(errorOf(await confirm(op.operation_id, await genuine(), other))).toMatchObject({ status: 404 });
    const state = await shop.api.state({ operation_id: op.operation_id });
    expect(state.json.status).toBe("awaiting_confirmation");
  });

  it("answers 400 for a missing operation_id, a wrong confirmation_type or no file, and 413 for a file over the limit", async () => {
    const op = await awaiting();
    const file = await genuine();
    expect(errorOf(await upload(shop, { confirmation_type: "receipt", receipt: file }))).toMatchObject({
      status: 400,
      field: "operation_id",
    });
    expect(
      errorOf(
        await upload(shop, { operation_id: op.operation_id, confirmation_type: "photo", receipt: file }),
      ),
    ).toMatchObject({ status: 400, field: "confirmation_type" });
    expect(
      errorOf(await upload(shop, { operation_id: op.operation_id, confirmation_type: "receipt" })),
    ).toMatchObject({ status: 400, field: "receipt" });
    const oversized = new Uint8Array(RECEIPT_MAX_BYTES + 1);
    oversized.set(file);
    expect(errorOf(await confirmOversized(op.operation_id, oversized))).toMatchObject({
      status: 413,
      code: "receipt_too_large",
    });
    const wayOver = await confirmOversized(op.operation_id, new Uint8Array(4 * RECEIPT_MAX_BYTES));
    expect(errorOf(wayOver)).toMatchObject({ status: 413, code: "receipt_too_large" });
    // None of these touched the payment.
    expect((await shop.api.state({ operation_id: op.operation_id })).json.status).toBe(
      "awaiting_confirmation",
    );
  });

  it("puts a forged receipt in manual_check/potential_fake; the operator approves with the amount", async () => {
    const op = await awaiting();
    const res = await confirm(op.operation_id, await forged());
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: "manual_check", manual_check_reason: "potential_fake" });
    await webhook(op.operation_id, "payment.manual_check");
    // Another file is not reviewed until an operator decides.
    expect(errorOf(await confirm(op.operation_id, await genuine()))).toMatchObject({
      status: 412,
      code: "receipt_already_reviewed",
    });

    const queue = await operator.admin("GET", `/manual-checks?shop_id=${shop.shopId}`);
    expect(queue.status).toBe(200);
    const waiting = queue.json.items.find(
      (i: { operation: { operation_id: string } }) => i.operation.operation_id === op.operation_id,
    );
    expect(waiting.findings.map((f: { check: string }) => f.check)).toContain("incremental_update");

    const decided = await operator.admin("POST", `/operations/${op.operation_id}/review`, {
      decision: "approve",
      amount: "1500.00",
      operator: "alice@example.test",
      reason: "the bank statement shows 1 500,00 arrived",
    });
    expect(decided.status).toBe(200);
    expect(decided.json.operation).toMatchObject({ status: "completed", actual_amount: "1500.00" });
    expect(decided.json.operation).not.toHaveProperty("manual_check_reason");
    await webhook(op.operation_id, "payment.completed");
    const state = await shop.api.state({ merchant_operation_id: op.merchant_operation_id });
    expect(state.json.receipts.map((r: { amount: number }) => r.amount)).toEqual([1500]);

    const again = await operator.admin("POST", `/operations/${op.operation_id}/review`, {
      decision: "reject",
      operator: "bob@example.test",
      reason: "second thoughts",
    });
    expect(errorOf(again)).toMatchObject({ status: 412, code: "receipt_already_reviewed" });
  });

  it("puts a file that is not a PDF in manual_check/not_terminal and completes on a genuine re-upload", async () => {
    const op = await awaiting();
    const first = await confirm(op.operation_id, notPdf());
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ status: "manual_check", manual_check_reason: "not_terminal" });
    const second = await confirm(op.operation_id, await genuine());
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ status: "completed", actual_amount: "1500.00" });
    expect(second.json).not.toHaveProperty("manual_check_reason");
  });

  // Last: kills the receipts service.
  it("answers 503 by operation_id and 200 unavailable with no receipts by merchant_operation_id while receipts is down", async () => {
    const state = await shop.api.state({ operation_id: completedId });
    const mop = state.json.merchant_operation_id as string;
    await stack.kill("receipts");

    const byId = await shop.api.state({ operation_id: completedId });
    expect(errorOf(byId)).toMatchObject({ status: 503, code: "receipt_evidence_unavailable" });
    const byMop = await shop.api.state({ merchant_operation_id: mop });
    expect(byMop.status).toBe(200);
    expect(byMop.json).toMatchObject({
      status: "completed",
      actual_amount: "1500.00",
      receipts: [],
      receipt_evidence_status: "unavailable",
    });
    // Uploads wait for it too: 503, the payment unchanged.
    const op = await awaiting();
    expect(errorOf(await confirm(op.operation_id, await genuine())).status).toBe(503);
    expect((await shop.api.state({ operation_id: op.operation_id })).json.status).toBe(
      "awaiting_confirmation",
    );
  });
});
