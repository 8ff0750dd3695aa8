/**
 * Every public error code, stated once: what a client of the gateway can find in the one
 * error body `{"error": {"code", "message", "field"?}, "request_id"}`. Services raise the
 * first group through their error catalogues (with `failure()` of libs/rpc); the edge raises
 * the second itself. Both `failure()` and the edge's `ApiError` take only a
 * `PublicErrorCode`, so a code misspelt anywhere fails the typecheck. The
 * spec's Errors table gives the statuses; these are the gateway's codes under them, as
 * the OpenAPI description ("Errors") documents them.
 */
export const SERVICE_ERROR_CODES = [
  "validation_failed",
  "idempotency_conflict",
  "operation_not_found",
  "not_cancellable",
  "route_not_configured",
  "pricing_not_configured",
  "fx_rate_missing",
  "no_provider_accepted",
  "provider_not_found",
  "bad_signature",
  "ledger_inconsistent",
  "receipt_evidence_unavailable",
  "receipt_too_large",
  "receipt_already_reviewed",
  "receipt_review_in_progress",
  "receipt_url_expired",
  "not_awaiting_confirmation",
  "not_in_manual_check",
  "dependency_unavailable",
  "not_found",
  "amount_unavailable",
  "slot_settled",
  "read_capacity_exhausted",
  "flexible_route_not_pool",
  "flexible_link_not_found",
  "dead_letter_not_found",
  "dead_letter_resolved",
  "dead_letter_retry_failed",
  "provider_fact_not_found",
  "provider_fact_already_resolved",
  "provider_fact_not_creditable",
  "internal",
] as const;

/** The codes only the edge answers with: its own checks of the HTTP request, keys, load and probes. */
export const EDGE_ERROR_CODES = [
  "invalid_json",
  "invalid_form",
  "unauthorized",
  "api_key_required",
  "invalid_api_key",
  "key_not_authorized",
  "forbidden",
  "method_not_allowed",
  "precondition_failed",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "overloaded",
  "incompatible_version",
  "unhealthy",
] as const;

/** Any code of the public error body. */
export type PublicErrorCode = (typeof SERVICE_ERROR_CODES)[number] | (typeof EDGE_ERROR_CODES)[number];

const ALL: ReadonlySet<string> = new Set<string>([...SERVICE_ERROR_CODES, ...EDGE_ERROR_CODES]);

/** True when a code read off the wire (an ErrorInfo) is one of ours. */
export const isPublicErrorCode = (code: string): code is PublicErrorCode => ALL.has(code);
