import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorInfo, ErrorInfoSchema } from "@gw/proto/gateway/common/v1/common_pb";

/**
 * The public error codes a merchant can see, one per failure kind. Services raise them
 * with `failure()`; the edge maps the Connect code to the HTTP status of the spec's
 * Errors table and puts this code in the JSON body.
 */
export type PublicErrorCode =
  | "validation_failed"
  | "idempotency_conflict"
  | "operation_not_found"
  | "not_cancellable"
  | "route_not_configured"
  | "pricing_not_configured"
  | "fx_rate_missing"
  | "no_provider_accepted"
  | "provider_not_found"
  | "bad_signature"
  | "ledger_inconsistent"
  | "receipt_evidence_unavailable"
  | "receipt_too_large"
  | "receipt_already_reviewed"
  | "receipt_review_in_progress"
  | "receipt_url_expired"
  | "not_awaiting_confirmation"
  | "not_in_manual_check"
  | "dependency_unavailable"
  | "not_found"
  | "amount_unavailable"
  | "slot_settled"
  | "read_capacity_exhausted"
  | "flexible_route_not_pool"
  | "flexible_link_not_found"
  | "dead_letter_not_found"
  | "dead_letter_resolved"
  | "dead_letter_retry_failed"
  | "provider_fact_not_found"
  | "provider_fact_already_resolved"
  | "provider_fact_not_creditable"
  | "internal";

/** A domain failure: a Connect error carrying the public code (and field) as a detail. */
export function failure(
  code: Code,
  publicCode: PublicErrorCode,
  message: string,
  field?: string,
): ConnectError {
  return new ConnectError(message, code, undefined, [
    { desc: ErrorInfoSchema, value: { code: publicCode, field: field ?? "" } },
  ]);
}

/** Reads the ErrorInfo detail back from an error a client received. */
export function errorInfo(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorInfoSchema)[0];
}

export { Code, ConnectError };
