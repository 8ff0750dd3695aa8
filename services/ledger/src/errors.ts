import type { QuoteRefusal } from "@gw/money";
import { Code, type ConnectError, failure } from "@gw/rpc";

/**
 * The ledger's error catalogue: every error the service answers with, named once with its
 * Connect code (the edge maps it to the HTTP status), its public code and its message. The
 * rest of the service raises these; no other file calls `failure(`
 * (tooling/scripts/check-inline-failures.ts).
 */

/** INVALID_ARGUMENT `validation_failed`: a request field is missing or malformed. */
export const invalid = (field: string, message: string): ConnectError =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

/** FAILED_PRECONDITION: a quote the shop's pricing cannot give (no tier, no FX rate). */
export const pricingRefused = (q: QuoteRefusal): ConnectError =>
  failure(Code.FailedPrecondition, q.refusal, q.message, q.field);

/** INTERNAL `ledger_inconsistent`: an account's balance differs from its postings. */
export const ledgerInconsistent = (): ConnectError =>
  failure(Code.Internal, "ledger_inconsistent", "the accounting position is internally inconsistent");

/** FAILED_PRECONDITION `idempotency_conflict`: an adjustment id reused with another request. */
export const adjustmentConflict = (): ConnectError =>
  failure(
    Code.FailedPrecondition,
    "idempotency_conflict",
    "adjustment_id was used with a different request",
    "adjustment_id",
  );
