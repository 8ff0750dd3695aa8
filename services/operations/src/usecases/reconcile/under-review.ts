import type { Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { receiptsRefusal } from "../../domain/dependency-errors.ts";
import type { OperationRow } from "../../domain/model.ts";
import { applyReview, endReview, type ReceiptDeps, SUBMIT_TIMEOUT_MS } from "../../steps/review.ts";

/**
 * A payment whose receipt is under review (`review_started_at`, set by `confirmPayment`
 * before the upload and cleared by the verdict) does not expire, nor its pool slot. When
 * the verdict never came back to operations (the upload's process died, or its call timed
 * out), the reconciler resumes it here: the receipts service's latest review of the
 * payment is applied like the upload's own answer; a review still running, or none at all,
 * is waited for until `REVIEW_HOLD_MS` after the review started (by the database's clock),
 * then the review is over without a verdict (`review_abandoned`) and the payment expires
 * as any other. A verdict recorded after that finds the payment over: a completion is
 * recorded as a provider fact (`applyReview`), never lost.
 */

/**
 * How long a review may run before it is over without a verdict: twice the longest an
 * upload waits for its review (queue and read included), so a verdict still on its way
 * is never cut off.
 */
export const REVIEW_HOLD_MS = 2 * SUBMIT_TIMEOUT_MS;

/** Review answers that move the payment; anything else (`reviewing`) is still running. */
const VERDICTS = new Set(["completed", "rejected", "manual_check"]);

/**
 * What became of a payment under review: its verdict applied (the row after), still
 * waiting for one, or the review over without a verdict (the mark cleared, so the payment
 * may expire). Throws when the receipts service does not answer: asked again later.
 */
export async function resumeReview(
  d: ReceiptDeps,
  row: OperationRow,
): Promise<{ applied: OperationRow } | "waiting" | "ended"> {
  let review: Review | undefined;
  try {
    const res = await d.receipts.getReview(
      { shopId: row.shop_id, id: { case: "operationId", value: row.id } },
      { timeoutMs: 5_000 },
    );
    review = res.review;
  } catch (err) {
    // No review at all: the upload never reached the receipts service (or not yet).
    if (!receiptsRefusal(err)?.noReview) throw err;
  }
  if (review && VERDICTS.has(review.verdict))
    return { applied: await applyReview(d, row.id, review, "receipt") };
  const started = row.review_started_at;
  if (started && started > (await d.store.deadlineIn(-REVIEW_HOLD_MS))) return "waiting";
  await endReview(d, row.id);
  d.logger.warn(
    { operationId: row.id, verdict: review?.verdict ?? "none" },
    "receipt review over without a verdict; the payment may expire",
  );
  return "ended";
}
