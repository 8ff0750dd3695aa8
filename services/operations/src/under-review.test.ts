import { randomUUID } from "node:crypto";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createServiceClient } from "@gw/rpc";
import { notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type OperationsHarness, startHarness } from "../test/harness.ts";
import { beginReview } from "./confirm.ts";
import { SELF_MATCHING } from "./pool.ts";

// A pool payin whose receipt is under review (the upload accepted, its verdict not yet
// recorded) neither expires nor loses its slot until the verdict; a verdict the upload
// never applied is applied by the reconciler, and a review that never returns ends so the
// payment expires as any other. Real operations, receipts, matching and ledger services;
// the service's own reconciler is off, the test runs passes itself.

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 3_000,
    attemptTimeoutMs: 1_000,
    config: { POOL_WINDOW_MS: "600000", POOL_SLOT_LIFETIME_MS: "600000", RECONCILE_INTERVAL_MS: "0" },
  });
});
afterAll(() => h?.stop());

/** The requisites the generated receipts show (`@gw/testkit/receipts`' defaults). */
const CARD = { number: "2202201234567890", name: "Иван Иванович Иванов" };

async function pooledPayment(amount: string) {
  const shopId = randomUUID();
  const scope = { shopId, merchantId: randomUUID() };
  await h.operations.putRoute({
    shopId,
    method: "WT_RUB_C2C",
    payin: [SELF_MATCHING],
    payout: [SELF_MATCHING],
    settlementCurrency: "RUB",
  });
  const tier = { minAmount: "0.01", maxAmount: "10000000.00", percent: "0", fixed: "0" };
  await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [tier] });
  const out = await h.operations.createOperation({
    scope,
    type: "payout",
    merchantOperationId: `out-${randomUUID()}`,
    clientId: "payee",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
    ...CARD,
  });
  const payoutId = out.operation?.operationId ?? "";
  await eventually(
    () => h.matching.getPoolPayout({ operationId: payoutId }).catch(() => undefined),
    (p) => expect(p?.payout?.freeAmount).toBe(amount),
  );
  const pay = await h.operations.createOperation({
    scope,
    type: "payment",
    merchantOperationId: `pay-${randomUUID()}`,
    clientId: "payer",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
  });
  expect(pay.operation?.status).toBe("awaiting_confirmation");
  return { scope, payoutId, payinId: pay.operation?.operationId ?? "" };
}

const row = async (id: string) => {
  const r = await h.store.findAnyById(id);
  if (!r) throw new Error(`no operation ${id}`);
  return r;
};

const slotStatus = async (payinId: string) => {
  const [s] = await h.sql<
    { status: string }[]
  >`select status from matching.slots where payin_id = ${payinId}`;
  return s?.status;
};

/** The payer's window closes (the payment's and its slot's expiry are the same). */
const windowCloses = (id: string) =>
  h.sql`update operations.operations set expires_at = now() - interval '1 second' where id = ${id}`;

/** What `confirmPayment` does first: the payment is marked under review before the upload. */
async function uploadAccepted(id: string) {
  expect(await beginReview(h, await row(id))).toBe(true);
}

/** The receipts service reviews the upload (as `confirmPayment` sends it) and records its verdict. */
async function receiptsReview(id: string, amount: string) {
  const r = await row(id);
  const receipts = createServiceClient(ReceiptsService, `http://127.0.0.1:${h.receipts.port}`);
  const { review } = await receipts.submitReceipt({
    operationId: r.id,
    shopId: r.shop_id,
    file: await receiptPdf(receiptSpec("sberbank", "card", { amount })),
    contentType: "application/pdf",
    fileName: "receipt.pdf",
    method: r.method ?? "",
    requisites: { number: r.number ?? "", name: r.name ?? undefined },
    expectedAmount: r.expected_amount ?? "",
    currency: r.currency ?? "",
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at?.toISOString(),
  });
  return review;
}

describe("a pool payin whose receipt is under review", () => {
  it("is not expired while its review runs, and the verdict its upload never applied (a crash) is applied by the reconciler, settling the slot", async () => {
    const { payoutId, payinId } = await pooledPayment("1517.23");
    await uploadAccepted(payinId);
    await windowCloses(payinId);
    const reconciler = h.reconciler();
    // The review is running (nothing recorded yet): the payment and its slot stay.
    await reconciler.runOnce();
    expect((await row(payinId)).status).toBe("awaiting_confirmation");
    expect(await slotStatus(payinId)).toBe("reserved");
    // The receipts service records its verdict; the upload's process died before applying it.
    expect((await receiptsReview(payinId, "1517.23"))?.verdict).toBe("completed");
    await h.sql`update operations.operations set next_check_at = null where id = ${payinId}`;
    await reconciler.runOnce();
    expect(await row(payinId)).toMatchObject({
      status: "completed",
      actual_amount: "1517.23",
      review_started_at: null,
    });
    await eventually(
      () => row(payoutId),
      (r) => expect(r).toMatchObject({ status: "completed", actual_amount: "1517.23" }),
    );
    expect(await slotStatus(payinId)).toBe("confirmed");
  });

  it("expires, freeing its slot, once a review that never returns is over", async () => {
    const { payinId } = await pooledPayment("1518.47");
    await uploadAccepted(payinId);
    await windowCloses(payinId);
    // The review started longer ago than any review runs, and nothing was recorded.
    await h.sql`
      update operations.operations set review_started_at = now() - interval '10 minutes' where id = ${payinId}`;
    const reconciler = h.reconciler();
    await reconciler.runOnce();
    expect(await row(payinId)).toMatchObject({ status: "awaiting_confirmation", review_started_at: null });
    await reconciler.runOnce();
    expect((await row(payinId)).status).toBe("rejected");
    await eventually(
      () => slotStatus(payinId),
      (s) => expect(s).toBe("released"),
    );
  });

  it("is cleared of its review by each verdict of the upload (manual_check, then completed)", async () => {
    const { scope, payinId } = await pooledPayment("1519.61");
    const confirm = (file: Uint8Array) =>
      h.operations.confirmPayment({
        scope,
        operationId: payinId,
        confirmationType: "receipt",
        file,
        contentType: "application/pdf",
        fileName: "receipt.pdf",
      });
    expect((await confirm(notPdf())).operation?.status).toBe("manual_check");
    expect(await row(payinId)).toMatchObject({ status: "manual_check", review_started_at: null });
    const { operation } = await confirm(
      await receiptPdf(receiptSpec("sberbank", "card", { amount: "1519.61" })),
    );
    expect(operation?.status).toBe("completed");
    expect((await row(payinId)).review_started_at).toBeNull();
    await eventually(
      () => slotStatus(payinId),
      (s) => expect(s).toBe("confirmed"),
    );
  });
});
