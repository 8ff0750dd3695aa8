import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { Decimal } from "@gw/money";
import type {
  ConfirmPaymentRequest,
  ListManualChecksRequest,
  ReceiptItem,
  ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { ReceiptsService, Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { bankDetails } from "../domain/banks.ts";
import { receiptsRefusal } from "../domain/dependency-errors.ts";
import type { Fact } from "../domain/lifecycle/apply.ts";
import {
  ConcurrentChangeError,
  DependencyUnavailableError,
  NotAwaitingConfirmationError,
  NotInManualCheckError,
  OperationNotFoundError,
  ReceiptEvidenceUnavailableError,
  ValidationError,
} from "../domain/lifecycle/errors.ts";
import { isTerminal, type LegRow, type OperationRow, toOperation } from "../domain/model.ts";
import { receiptsOf } from "../domain/receipts-of.ts";
import type { OperationStore } from "../repository/operations.ts";
import { recordReceiptFact } from "../steps/provider-facts.ts";

/**
 * Receipt confirmation: a payer's receipt goes to the receipts service, whose verdict
 * moves the payment (`completed`, `rejected`, `manual_check`); an operator resolves a
 * `manual_check`; reads sign the `receipt_url` of each receipt-proven contribution.
 * The receipts service never moves an operation: its verdict is a fact of the lifecycle,
 * applied here under the row lock, with its event in the same statement (`store.applyFact`).
 */

export interface ReceiptDeps {
  store: OperationStore;
  receipts: Client<typeof ReceiptsService>;
  logger: Logger;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A review reads the PDF in a bounded worker (5 s) behind a bounded queue: room for both. */
export const SUBMIT_TIMEOUT_MS = 25_000;
/** Signing links is one indexed query: a read must not wait long for it. */
const SIGN_TIMEOUT_MS = 2_000;
/** Statuses in which a receipt is taken (the receipts service decides on re-uploads in manual_check). */
const REVIEWABLE = new Set(["awaiting_confirmation", "manual_check"]);

const notFound = () => new OperationNotFoundError();
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
    // reconciler asks for it (under-review.ts).
    if (reviewing && err instanceof ConnectError && err.code === Code.InvalidArgument)
      await endReview(d, row.id);
    throw fromReceipts(err, d.logger, "submit");
  }
  if (!review) throw new DependencyUnavailableError("no review came back; retry");
  const after = await applyReview(d, row.id, review, "receipt");
  return { operation: toOperation(after), replayed };
}

/**
 * Marks a payment awaiting confirmation as under review (`review_started`) before its
 * receipt goes to the receipts service, under the row lock: from then on it does not
 * expire (nor its pool slot) until the verdict, which clears the mark with the status
 * (`applyReview`), or until the reconciler finds the review over without one. A payment
 * in manual_check never expires, so it is not marked. Answers whether it marked it;
 * throws 412 when the payment left review meanwhile.
 */
export async function beginReview(d: Pick<ReceiptDeps, "store">, read: OperationRow): Promise<boolean> {
  if (read.status !== "awaiting_confirmation") return false;
  const at = await d.store.deadlineIn(0);
  return d.store.transaction(async (tx) => {
    const row = await d.store.lock(read.id, tx);
    if (!row) throw notFound();
    if (row.status !== "awaiting_confirmation") {
      if (REVIEWABLE.has(row.status)) return false;
      throw notAwaiting(row);
    }
    const { row: next } = await d.store.applyFact(row, { kind: "review_started", at }, { tx });
    if (!next) throw new ConcurrentChangeError("operation changed; retry");
    return true;
  });
}

/** Clears the under-review mark of a payment still awaiting confirmation (`review_abandoned`). */
export async function endReview(d: Pick<ReceiptDeps, "store">, operationId: string): Promise<boolean> {
  return d.store.transaction(async (tx) => {
    const row = await d.store.lock(operationId, tx);
    if (row?.status !== "awaiting_confirmation" || !row.review_started_at) return false;
    const { row: next } = await d.store.applyFact(row, { kind: "review_abandoned" }, { tx });
    return next !== undefined;
  });
}

function notAwaiting(row: OperationRow) {
  return new NotAwaitingConfirmationError(
    row.type === "payment"
      ? `the payment is ${row.status}, not awaiting confirmation`
      : "a payout takes no confirmation",
  );
}

/**
 * Applies a review's verdict under the row lock: `completed` records the contribution
 * (the receipt's amount, or the operator's) with its receipt id and completes the
 * payment with that actual amount; `rejected` rejects it; `manual_check` puts it (or
 * keeps it) in manual_check with the reason. An unchanged state emits nothing. A payment
 * that left review meanwhile (cancelled, expired) is not moved: 412, and a completed
 * verdict for it is recorded as a provider fact (`recordReceiptFact`), since money moved.
 */
export async function applyReview(
  d: ReceiptDeps,
  operationId: string,
  review: Review,
  source: "receipt" | "operator",
): Promise<OperationRow> {
  if (review.verdict !== "completed" && review.verdict !== "rejected" && review.verdict !== "manual_check")
    throw new DependencyUnavailableError(`unexpected verdict ${review.verdict}`);
  const fact: Fact = {
    kind: source === "receipt" ? "receipt_reviewed" : "operator_reviewed",
    verdict: review.verdict,
    receiptId: review.receiptId,
    amount: review.actualAmount,
    reason: review.manualCheckReason === "not_terminal" ? "not_terminal" : "potential_fake",
  };
  return d.store.transaction(async (tx) => {
    const row = await d.store.lock(operationId, tx);
    if (!row) throw notFound();
    if (!REVIEWABLE.has(row.status)) {
      if (review.verdict === "completed" && row.status !== "completed") {
        // The payer paid after all: recorded beside the payment (in a transaction of its
        // own, since this one is rolled back by the refusal) and booked for an operator.
        d.logger.warn(
          { operationId, status: row.status, receiptId: review.receiptId, source },
          "receipt for a payment already over",
        );
        await d.store.transaction((own) => recordReceiptFact(d, own, row, review));
      }
      throw notAwaiting(row);
    }
    const { row: next } = await d.store.applyFact(row, fact, { tx });
    if (!next) throw new ConcurrentChangeError("operation changed; retry");
    return next;
  });
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

/**
 * The receipts of a read with their signed links. Contributions proven by a receipt get
 * a `receipt_url` signed now by the receipts service (links are never stored); provider
 * legs keep null. When signing fails (receipts unreachable, no secret), the read by
 * `operation_id` answers UNAVAILABLE `receipt_evidence_unavailable` (503) and the read by
 * `merchant_operation_id` answers `unavailable` with no receipts, as the spec requires.
 */
export async function receiptEvidence(
  d: ReceiptDeps,
  row: OperationRow,
  legs: LegRow[],
  lookup: "operationId" | "merchantOperationId",
): Promise<{ receipts: ReceiptItem[]; status: string }> {
  const base = receiptsOf(row, legs);
  const proven = legs.filter((l) => l.receipt_id);
  if (row.status !== "completed" || proven.length === 0) return base;
  try {
    const res = await d.receipts.signReceiptUrls(
      { shopId: row.shop_id, receiptIds: proven.map((l) => l.receipt_id as string) },
      { timeoutMs: SIGN_TIMEOUT_MS },
    );
    const urlOf = new Map(res.urls.map((u) => [u.receiptId, u.url]));
    const legUrl = new Map(proven.map((l) => [l.id, urlOf.get(l.receipt_id as string)]));
    for (const item of base.receipts) {
      if (!legUrl.has(item.id)) continue;
      const url = legUrl.get(item.id);
      if (!url) throw new Error("a receipt link is missing from the answer");
      item.receiptUrl = url;
    }
    return base;
  } catch (err) {
    // Never log the error's text as is: a partial answer could carry a signed link.
    d.logger.warn(
      { operationId: row.id, code: err instanceof ConnectError ? Code[err.code] : "internal" },
      "receipt links could not be signed",
    );
    if (lookup === "operationId") throw new ReceiptEvidenceUnavailableError();
    return { receipts: [], status: "unavailable" };
  }
}
