import { Code, type ConnectError, failure } from "@gw/rpc";

/**
 * The receipts service's error catalogue: every error it answers with, named once with its
 * Connect code (the edge maps it to the HTTP status), its public code and its message. The
 * rest of the service raises these; no other file calls `failure(`
 * (tooling/scripts/check-inline-failures.ts).
 */

/** INVALID_ARGUMENT `validation_failed`: a request field is missing or malformed. */
export const invalid = (field: string, message: string): ConnectError =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

/** NOT_FOUND `not_found`: `what` does not exist, or the caller may not see it. */
export const notFound = (what: string): ConnectError =>
  failure(Code.NotFound, "not_found", `${what} not found`);

/** INVALID_ARGUMENT `receipt_too_large`: the file is over the store's limit. */
export const receiptTooLarge = (maxBytes: number): ConnectError =>
  failure(Code.InvalidArgument, "receipt_too_large", `the file is larger than ${maxBytes} bytes`, "receipt");

/** FAILED_PRECONDITION `receipt_already_reviewed`: the review was decided; `why` says how. */
export const receiptAlreadyReviewed = (why: string): ConnectError =>
  failure(Code.FailedPrecondition, "receipt_already_reviewed", why);

/** FAILED_PRECONDITION `receipt_review_in_progress`: another file of the operation is being reviewed. */
export const receiptReviewInProgress = (): ConnectError =>
  failure(
    Code.FailedPrecondition,
    "receipt_review_in_progress",
    "a receipt of this operation is being reviewed",
  );

/** UNAVAILABLE `receipt_evidence_unavailable`: the stored file is missing. */
export const receiptFileUnavailable = (): ConnectError =>
  failure(Code.Unavailable, "receipt_evidence_unavailable", "the receipt file is not available");

/** UNAVAILABLE `receipt_evidence_unavailable`: no signing secret, so no receipt links. */
export const receiptLinksUnavailable = (): ConnectError =>
  failure(
    Code.Unavailable,
    "receipt_evidence_unavailable",
    "receipt links cannot be signed (no secret configured)",
  );

/** PERMISSION_DENIED `receipt_url_expired`: a receipt link past its expiry. */
export const receiptUrlExpired = (): ConnectError =>
  failure(Code.PermissionDenied, "receipt_url_expired", "the receipt link has expired");
