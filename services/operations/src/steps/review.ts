import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type { ReceiptsService, Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import type { Fact } from "../domain/lifecycle/apply.ts";
import {
  ConcurrentChangeError,
  DependencyUnavailableError,
  NotAwaitingConfirmationError,
  OperationNotFoundError,
} from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import type { OperationStore } from "../repository/operations.ts";
import { recordReceiptFact } from "./provider-facts.ts";

/**
 * A receipt's review as a fact of the lifecycle: marked under review before the upload,
 * its verdict applied under the row lock with its event in the same statement. Shared by
 * the confirm use case (an upload, an operator's decision) and the reconciler (a verdict
 * that never came back).
 */

/** What a review needs: the store, the receipts service, a logger. */
export interface ReceiptDeps {
  store: OperationStore;
  receipts: Client<typeof ReceiptsService>;
  logger: Logger;
}

/** A review reads the PDF in a bounded worker (5 s) behind a bounded queue: room for both. */
export const SUBMIT_TIMEOUT_MS = 25_000;

/** Statuses in which a receipt is taken (the receipts service decides on re-uploads in manual_check). */
export const REVIEWABLE = new Set(["awaiting_confirmation", "manual_check"]);

export const notFound = () => new OperationNotFoundError();

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

export function notAwaiting(row: OperationRow) {
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
