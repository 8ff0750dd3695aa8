import { Code, failure } from "@gw/rpc";

/**
 * The other services' refusals as the fakes raise them, each named once with the Connect
 * and public codes the real service answers with (services/ledger/src/errors.ts,
 * services/receipts/src/errors.ts, services/matching/src/errors.ts); the contracts hold
 * the fakes to them.
 */
export const fakeErrors = {
  /** INVALID_ARGUMENT `validation_failed`, naming the field. */
  validation: (field: string, message: string) =>
    failure(Code.InvalidArgument, "validation_failed", message, field),
  /** The ledger's FAILED_PRECONDITION refusal of a quote. */
  quoteRefused: (refusal: "pricing_not_configured" | "fx_rate_missing", message: string, field: string) =>
    failure(Code.FailedPrecondition, refusal, message, field),
  /** UNAVAILABLE: a call the test has taken down (`FakeLedger.down`). */
  unavailable: () => failure(Code.Unavailable, "dependency_unavailable", "the fake service is down"),
  /** The receipts service's FAILED_PRECONDITION `receipt_already_reviewed`. */
  alreadyReviewed: (message: string) => failure(Code.FailedPrecondition, "receipt_already_reviewed", message),
  /** NOT_FOUND `not_found`. */
  notFound: (message: string) => failure(Code.NotFound, "not_found", message),
  /** Matching's FAILED_PRECONDITION `amount_unavailable`: no open payout takes the amount now. */
  amountUnavailable: () =>
    failure(Code.FailedPrecondition, "amount_unavailable", "no pool payout can take this amount now"),
  /** Matching's FAILED_PRECONDITION `slot_settled`: the slot is confirmed or released, or its attempt was withdrawn. */
  slotSettled: (message: string) => failure(Code.FailedPrecondition, "slot_settled", message),
  /** Matching's FAILED_PRECONDITION `idempotency_conflict`: the payout is in the pool with other terms. */
  idempotencyConflict: () =>
    failure(
      Code.FailedPrecondition,
      "idempotency_conflict",
      "the payout is already in the pool with another shop, method, currency or amount",
    ),
};
