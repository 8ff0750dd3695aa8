import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { Decimal } from "@gw/money";
import type {
  ConfirmPaymentRequest,
  ListManualChecksRequest,
  ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { bankDetails } from "../domain/banks.ts";
import { receiptsRefusal } from "../domain/dependency-errors.ts";
import {
  DependencyUnavailableError,
  NotInManualCheckError,
  ValidationError,
} from "../domain/lifecycle/errors.ts";
import { isTerminal, toOperation } from "../domain/model.ts";
import { SIGN_TIMEOUT_MS } from "../steps/receipt-evidence.ts";
import {
  applyReview,
  beginReview,
  endReview,
  notAwaiting,
  notFound,
  REVIEWABLE,
  type ReceiptDeps,
  SUBMIT_TIMEOUT_MS,
} from "../steps/review.ts";

/**
 * Receipt confirmation: a payer's receipt goes to the receipts service, whose verdict
 * moves the payment (`completed`, `rejected`, `manual_check`); an operator resolves a
 * `manual_check`; reads sign the `receipt_url` of each receipt-proven contribution.
 * The receipts service never moves an operation: its verdict is a fact of the lifecycle,
 * applied under the row lock (steps/review.ts), with its event in the same statement
 * (`store.applyFact`).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const invalid = (field: string, message: string) => new ValidationError(message, field);

/** Errors of the receipts service a caller can act on pass through; the rest mean "retry later". */
function fromReceipts(err: unknown, logger: Logger, what: string): Error {
  const refusal = receiptsRefusal(err);
  if (refusal) return refusal.err;
  logger.warn({ err, what }, "receipts service unavailable");
  return new DependencyUnavailableError("receipt review is unavailable, retry later");
}

/** `POST /v1/confirm_payment`: review the receipt, then apply the verdict. */
export async function confirmPayment(d: ReceiptDeps, req: ConfirmPaymentRequest) {
  const shopId = req.scope?.shopId ?? "";
  if (!UUID.test(req.operationId)) throw invalid("operation_id", "operation_id must be a UUID");
  if (req.confirmationType !== "receipt")
    throw invalid("confirmation_type", "confirmation_type must be receipt");
  if (req.file.length === 0) throw invalid("receipt", "the receipt file is empty");
  const row = await d.store.findById(shopId, req.operationId);
  if (!row || row.status === "routing" || row.request_hash === null) throw notFound();
  if (row.type !== "payment" || !REVIEWABLE.has(row.status) || row.number === null) throw notAwaiting(row);

  const reviewing = await beginReview(d, row);
  let review: Review | undefined;
  let replayed = false;
  try {
    const res = await d.receipts.submitReceipt(
      {
        operationId: row.id,
        shopId: row.shop_id,
        file: req.file,
        contentType: req.contentType,
        fileName: req.fileName,
        method: row.method ?? "",
        requisites: {
          number: row.number,
          name: row.name ?? undefined,
          bankname: row.bankname ?? undefined,
          banknameDetails: row.bankname ? bankDetails(row.currency ?? "", row.bankname) : undefined,
        },
        expectedAmount: row.expected_amount ?? "",
        currency: row.currency ?? "",
        createdAt: row.created_at.toISOString(),
        expiresAt: row.expires_at?.toISOString(),
      },
      { timeoutMs: SUBMIT_TIMEOUT_MS },
    );
    review = res.review;
    replayed = res.replayed;
  } catch (err) {
    // The file refused: no review runs, the payment may expire again. Otherwise (no
    // answer, or another upload's review running) a verdict may still be recorded: the
    // reconciler asks for it (reconcile/under-review.ts).
    if (reviewing && err instanceof ConnectError && err.code === Code.InvalidArgument)
      await endReview(d, row.id);
    throw fromReceipts(err, d.logger, "submit");
  }
  if (!review) throw new DependencyUnavailableError("no review came back; retry");
  const after = await applyReview(d, row.id, review, "receipt");
  return { operation: toOperation(after), replayed };
}

const AMOUNT = /^\d{1,16}(\.\d{1,2})?$/;

/** Admin: an operator approves (with the amount that arrived) or rejects a payment in manual_check. */
export async function resolveReview(d: ReceiptDeps, req: ResolveReviewRequest) {
  if (!UUID.test(req.operationId)) throw invalid("operation_id", "operation_id must be a UUID");
  if (req.decision !== "approve" && req.decision !== "reject")
    throw invalid("decision", "decision must be approve or reject");
  if (!req.operator.trim()) throw invalid("operator", "operator is required");
  if (!req.reason.trim()) throw invalid("reason", "reason is required");
  if (req.decision === "approve" && !(req.amount && AMOUNT.test(req.amount) && new Decimal(req.amount).gt(0)))
    throw invalid("amount", "approve needs the amount that arrived, a positive decimal string");
  if (req.decision === "reject" && req.amount) throw invalid("amount", "reject takes no amount");

  const row = await d.store.findAnyById(req.operationId);
  if (!row || row.request_hash === null || row.status === "routing") throw notFound();
  if (row.status !== "manual_check" && !isTerminal(row.status))
    throw new NotInManualCheckError(`the payment is ${row.status}, not in manual_check`);
  let review: Review | undefined;
  let replayed = false;
  try {
    const res = await d.receipts.resolveManualCheck(
      {
        shopId: row.shop_id,
        operationId: row.id,
        decision: req.decision,
        amount: req.decision === "approve" ? new Decimal(req.amount ?? "0").toFixed(2) : undefined,
        operator: req.operator.trim(),
        reason: req.reason.trim(),
      },
      { timeoutMs: SIGN_TIMEOUT_MS * 5 },
    );
    review = res.review;
    replayed = res.replayed;
  } catch (err) {
    // No review of this operation: it was not put in manual_check by a receipt.
    if (receiptsRefusal(err)?.noReview)
      throw new NotInManualCheckError("the payment has no receipt to review");
    throw fromReceipts(err, d.logger, "resolve");
  }
  if (!review) throw new DependencyUnavailableError("no review came back; retry");
  const current = await d.store.findAnyById(row.id);
  // The same decision again, already applied: answer the operation as it is.
  if (replayed && current && isTerminal(current.status) && current.status === review.verdict)
    return { operation: toOperation(current), replayed: true };
  const after = await applyReview(d, row.id, review, "operator");
  d.logger.info(
    { operationId: row.id, decision: req.decision, operator: req.operator.trim(), status: after.status },
    "manual check resolved by an operator",
  );
  return { operation: toOperation(after), replayed };
}

/** Admin: the payments waiting in manual_check, oldest first, with the review's findings when available. */
export async function listManualChecks(d: ReceiptDeps, req: ListManualChecksRequest) {
  const limit = req.limit === 0 ? 50 : req.limit;
  if (limit < 1 || limit > 200) throw invalid("limit", "limit must be 1..200");
  if (req.shopId !== undefined && !UUID.test(req.shopId)) throw invalid("shop_id", "shop_id must be a UUID");
  const rows = await d.store.manualChecks(limit, req.shopId);
  const items = await Promise.all(
    rows.map(async (row) => {
      const review = await d.receipts
        .getReview(
          { shopId: row.shop_id, id: { case: "operationId", value: row.id } },
          { timeoutMs: SIGN_TIMEOUT_MS },
        )
        .then((r) => r.review)
        .catch(() => undefined);
      return {
        shopId: row.shop_id,
        operation: toOperation(row),
        receiptId: review?.receiptId,
        findings: (review?.findings ?? []).map((f) => ({
          check: f.check,
          outcome: f.outcome,
          detail: f.detail,
        })),
      };
    }),
  );
  return { items };
}
