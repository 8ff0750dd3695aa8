import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createServiceClient } from "@gw/rpc";
import { editAmountIncrementally, notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";

// Receipt confirmation over the real operations, receipts, ledger and sandbox services:
// the receipts service's verdicts move the payment, an operator resolves manual checks,
// and reads sign the links of receipt-proven contributions.

let h: OperationsHarness;
let shop: { shopId: string; merchantId: string };

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  // The requisites the generated receipts show (`@gw/testkit/receipts`' defaults).
  await h.provider("receipts", {
    mode: "accept",
    receipt_required: true,
    expires_in_seconds: 1800,
    requisites: { card_number: "2202201234567890", holder_name: "Иван Иванович Иванов" },
  });
  await h.provider("acme", { mode: "accept" });
  shop = await h.shop(["receipts"]);
});
afterAll(() => h?.stop());

async function aPayment(target = shop, amount = "1500.00") {
  const { operation } = await h.operations.createOperation({
    scope: target,
    type: "payment",
    merchantOperationId: `mop-${randomUUID()}`,
    clientId: "client-1",
    method: "WT_RUB_C2C",
    amount,
    currency: "RUB",
  });
  expect(operation?.status).toBe("awaiting_confirmation");
  return operation!;
}

const genuine = (amount = "1500.00") => receiptPdf(receiptSpec("sberbank", "card", { amount }));

function confirm(operationId: string, file: Uint8Array, scope = shop) {
  return h.operations.confirmPayment({
    scope,
    operationId,
    confirmationType: "receipt",
    file,
    contentType: "application/pdf",
    fileName: "receipt.pdf",
  });
}

describe("confirm_payment", () => {
  it("completes a payment with the receipt's amount and one contribution whose link is signed", async () => {
    const op = await aPayment();
    const { operation, replayed } = await confirm(op.operationId, await genuine());
    expect(replayed).toBe(false);
    expect(operation).toMatchObject({ status: "completed", actualAmount: "1500.00" });

    const state = await h.operations.getOperation({
      scope: shop,
      id: { case: "operationId", value: op.operationId },
    });
    expect(state.receiptEvidenceStatus).toBe("complete");
    expect(state.receipts).toHaveLength(1);
    const item = state.receipts[0]!;
    expect(item.amount).toBe("1500.00");
    const url = new URL(item.receiptUrl ?? "");
    expect(url.pathname).toMatch(/^\/receipts\/[0-9a-f-]{36}$/);
    // The link is one the receipts service accepts for this shop.
    const receipts = createServiceClient(ReceiptsService, `http://127.0.0.1:${h.receipts.port}`);
    const verified = await receipts.verifyReceiptUrl({
      receiptId: url.pathname.split("/").pop()!,
      expires: BigInt(url.searchParams.get("exp")!),
      signature: url.searchParams.get("sig")!,
      shopId: shop.shopId,
    });
    expect(verified.operationId).toBe(op.operationId);

    await eventually(
      () => h.ledger.getBalances({ shopId: shop.shopId }),
      (b) => expect(b.balances.find((x) => x.currency === "RUB")?.balance).not.toBe("0.00"),
    );
  });

  it("answers 412 not_awaiting_confirmation for a receipt sent again after the payment completed", async () => {
    const op = await aPayment();
    const file = await genuine();
    await confirm(op.operationId, file);
    const again = await failureOf(confirm(op.operationId, file));
    expect(again.code).toBe(Code.FailedPrecondition);
    expect(again.info?.code).toBe("not_awaiting_confirmation");
  });

  it("rejects a payment whose receipt shows a declined transfer", async () => {
    const op = await aPayment();
    const file = await receiptPdf(receiptSpec("vtb", "card", { status: "failed" }));
    const { operation } = await confirm(op.operationId, file);
    expect(operation).toMatchObject({ status: "rejected", actualAmount: "0.00" });
  });

  it("puts a forged receipt in manual_check/potential_fake and lets no other file through", async () => {
    const op = await aPayment();
    const forged = await editAmountIncrementally(
      receiptSpec("sberbank", "card", { amount: "150.00" }),
      "1 500,00 ₽",
    );
    const { operation } = await confirm(op.operationId, forged);
    expect(operation).toMatchObject({ status: "manual_check", manualCheckReason: "potential_fake" });

    // The same file again is answered as recorded; another one waits for the operator.
    const replay = await confirm(op.operationId, forged);
    expect(replay.replayed).toBe(true);
    expect(replay.operation?.version).toBe(operation?.version);
    const other = await failureOf(confirm(op.operationId, await genuine()));
    expect(other.code).toBe(Code.FailedPrecondition);
    expect(other.info?.code).toBe("receipt_already_reviewed");

    const queue = await h.operations.listManualChecks({ shopId: shop.shopId });
    const waiting = queue.items.find((i) => i.operation?.operationId === op.operationId);
    expect(waiting?.findings.map((f) => f.check)).toContain("incremental_update");
  });

  it("reviews a readable receipt sent after a file that was not a PDF", async () => {
    const op = await aPayment();
    const first = await confirm(op.operationId, notPdf());
    expect(first.operation).toMatchObject({ status: "manual_check", manualCheckReason: "not_terminal" });
    const second = await confirm(op.operationId, await genuine());
    expect(second.operation).toMatchObject({ status: "completed", actualAmount: "1500.00" });
  });

  it("answers potential_fake when the internal reason of a manual check is missing, in the row or in the review", async () => {
    const op = await aPayment();
    const file = notPdf();
    const first = await confirm(op.operationId, file);
    expect(first.operation).toMatchObject({ status: "manual_check", manualCheckReason: "not_terminal" });
    // A row without a reason (written by an older version, or repaired by hand) reads as potential_fake.
    await h.sql`
      update operations.operations set manual_check_reason = null where id = ${op.operationId}`;
    const read = await h.operations.getOperation({
      scope: shop,
      id: { case: "operationId", value: op.operationId },
    });
    expect(read.operation).toMatchObject({ status: "manual_check", manualCheckReason: "potential_fake" });
    // A recorded review without a reason, answered again for the same file, is applied as
    // potential_fake, and the row now records it.
    await h.sql`
      update receipts.receipt_reviews set manual_check_reason = null where operation_id = ${op.operationId}`;
    const replay = await confirm(op.operationId, file);
    expect(replay.replayed).toBe(true);
    expect(replay.operation).toMatchObject({ status: "manual_check", manualCheckReason: "potential_fake" });
    const row = await h.store.findAnyById(op.operationId);
    expect(row?.manual_check_reason).toBe("potential_fake");
  });

  it("answers not found for another shop's payment and changes nothing", async () => {
    const op = await aPayment();
    const other = await h.shop(["receipts"]);
    const res = await failureOf(confirm(op.operationId, await genuine(), other));
    expect(res.code).toBe(Code.NotFound);
    const state = await h.operations.getOperation({
      scope: shop,
      id: { case: "operationId", value: op.operationId },
    });
    expect(state.operation?.status).toBe("awaiting_confirmation");
  });

  it("refuses a payment that awaits no receipt, a wrong confirmation type and an empty file", async () => {
    const acmeShop = await h.shop(["acme"]);
    const { operation } = await h.operations.createOperation({
      scope: acmeShop,
      type: "payment",
      merchantOperationId: `mop-${randomUUID()}`,
      clientId: "c",
      method: "WT_RUB_C2C",
      amount: "1500.00",
      currency: "RUB",
    });
    expect(operation?.status).toBe("pending");
    const pending = await failureOf(confirm(operation!.operationId, await genuine(), acmeShop));
    expect(pending.info?.code).toBe("not_awaiting_confirmation");

    const op = await aPayment();
    const wrongType = await failureOf(
      h.operations.confirmPayment({
        scope: shop,
        operationId: op.operationId,
        confirmationType: "photo",
        file: new Uint8Array([1]),
        contentType: "image/jpeg",
      }),
    );
    expect(wrongType).toMatchObject({ code: Code.InvalidArgument });
    expect(wrongType.info?.field).toBe("confirmation_type");
    const empty = await failureOf(confirm(op.operationId, new Uint8Array()));
    expect(empty.info?.field).toBe("receipt");
  });
});

describe("operator review", () => {
  async function inManualCheck() {
    const op = await aPayment();
    const forged = await editAmountIncrementally(
      receiptSpec("sberbank", "card", { amount: "150.00" }),
      "1 500,00 ₽",
    );
    await confirm(op.operationId, forged);
    return op;
  }

  it("completes a payment the operator approves, with the amount that arrived", async () => {
    const op = await inManualCheck();
    const approve = {
      operationId: op.operationId,
      decision: "approve",
      amount: "150.00",
      operator: "alice",
      reason: "bank statement shows 150.00",
    };
    const { operation, replayed } = await h.operations.resolveReview(approve);
    expect(replayed).toBe(false);
    expect(operation).toMatchObject({ status: "completed", actualAmount: "150.00" });
    expect(operation?.manualCheckReason).toBeUndefined();

    const state = await h.operations.getOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: op.merchantOperationId },
    });
    expect(state.receipts.map((r) => r.amount)).toEqual(["150.00"]);
    expect(state.receipts[0]?.receiptUrl).toMatch(/\/receipts\//);

    // The same decision again is answered as recorded; another one is refused.
    const again = await h.operations.resolveReview(approve);
    expect(again.replayed).toBe(true);
    expect(again.operation?.version).toBe(operation?.version);
    const reject = await failureOf(
      h.operations.resolveReview({ ...approve, decision: "reject", amount: undefined }),
    );
    expect(reject.info?.code).toBe("receipt_already_reviewed");
  });

  it("rejects a payment the operator rejects", async () => {
    const op = await inManualCheck();
    const { operation } = await h.operations.resolveReview({
      operationId: op.operationId,
      decision: "reject",
      operator: "bob",
      reason: "nothing arrived",
    });
    expect(operation).toMatchObject({ status: "rejected", actualAmount: "0.00" });
  });

  it("refuses a decision without a reason, an approval without an amount and a payment not in manual_check", async () => {
    const op = await inManualCheck();
    const noReason = await failureOf(
      h.operations.resolveReview({
        operationId: op.operationId,
        decision: "reject",
        operator: "bob",
        reason: "",
      }),
    );
    expect(noReason.info?.field).toBe("reason");
    const noAmount = await failureOf(
      h.operations.resolveReview({
        operationId: op.operationId,
        decision: "approve",
        operator: "bob",
        reason: "ok",
      }),
    );
    expect(noAmount.info?.field).toBe("amount");
    const waiting = await aPayment();
    const notInCheck = await failureOf(
      h.operations.resolveReview({
        operationId: waiting.operationId,
        decision: "reject",
        operator: "bob",
        reason: "no",
      }),
    );
    expect(notInCheck).toMatchObject({ code: Code.FailedPrecondition });
    expect(notInCheck.info?.code).toBe("not_in_manual_check");
  });
});

// Last: stops the receipts service.
describe("receipt evidence while the receipts service is down", () => {
  it("answers unavailable by operation_id and an empty unavailable list by merchant_operation_id", async () => {
    const op = await aPayment();
    await confirm(op.operationId, await genuine());
    await h.receipts.stop();

    const byId = await failureOf(
      h.operations.getOperation({ scope: shop, id: { case: "operationId", value: op.operationId } }),
    );
    expect(byId.code).toBe(Code.Unavailable);
    expect(byId.info?.code).toBe("receipt_evidence_unavailable");

    const byMop = await h.operations.getOperation({
      scope: shop,
      id: { case: "merchantOperationId", value: op.merchantOperationId },
    });
    expect(byMop.operation?.status).toBe("completed");
    expect(byMop.receiptEvidenceStatus).toBe("unavailable");
    expect(byMop.receipts).toEqual([]);

    // An operation still awaiting its receipt needs no links: read as before.
    const waiting = await aPayment();
    const state = await h.operations.getOperation({
      scope: shop,
      id: { case: "operationId", value: waiting.operationId },
    });
    expect(state.receiptEvidenceStatus).toBe("not_ready");
  });
});
