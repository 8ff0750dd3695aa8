import type { components, paths } from "./gen/schema.ts";

type JsonOf<T> = T extends { content: { "application/json": infer B } } ? B : never;
type Success<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: { 200: infer R };
}
  ? JsonOf<R>
  : never;
type RequestOf<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: infer B;
}
  ? JsonOf<NonNullable<B>>
  : never;

/** The body of `POST /v1/payment`, `/v1/payout` and `/v1/payment/link`. */
export type CreateOperationRequest = components["schemas"]["CreateOperationRequest"];
/** A payment or payout as a create answers it. */
export type Operation = Success<"/v1/payment", "post">;
/** A payment created with a hosted page: the operation plus `payment_url`. */
export type LinkOperation = Success<"/v1/payment/link", "post">;
/** The body of `POST /v1/payment/link/flexible`. */
export type FlexibleLinkRequest = RequestOf<"/v1/payment/link/flexible", "post">;
/** What `POST /v1/payment/link/flexible` answers: a link, or the amounts available instead. */
export type FlexibleLinkResult = Success<"/v1/payment/link/flexible", "post">;
/** `{ operation_id }` or `{ merchant_operation_id }`. */
export type OperationRef = RequestOf<"/v1/get_operation_state", "post">;
/** An operation with its receipts, as `get_operation_state` and every webhook's `data` show it. */
export type OperationState = Success<"/v1/get_operation_state", "post">;
/** The body of `POST /v1/cancel_operation`. */
export type CancelOperationRequest = RequestOf<"/v1/cancel_operation", "post">;
/** The decision of a cancel (`cancelled` or `already_terminal`) and a snapshot of the operation. */
export type CancelResult = Success<"/v1/cancel_operation", "post">;
/** The shop's balances, one row per currency. */
export type Balances = Success<"/v1/balances", "get">;
/** The query of `GET /v1/payment/availability`. */
export type AvailabilityQuery = paths["/v1/payment/availability"]["get"]["parameters"]["query"];
/** Which amounts the self-matching pool can take now. */
export type Availability = Success<"/v1/payment/availability", "get">;
/** The body of `POST /v1/payment/recommendations`. */
export type RecommendationsRequest = RequestOf<"/v1/payment/recommendations", "post">;
/** Amounts the pool recommends. */
export type Recommendations = Success<"/v1/payment/recommendations", "post">;
/** What `POST /v1/confirm_payment` answers. */
export type ConfirmResult = Success<"/v1/confirm_payment", "post">;
/** The one error body of every error answer. */
export type ErrorBody = components["schemas"]["Error"];

/**
 * The error codes the gateway documents for the merchant API (OpenAPI description,
 * "Errors"; `info["x-error-codes"].merchant`, which types.unit.test.ts holds this list to).
 * A code not in this list may still arrive from a newer gateway, so `GatewayError.code` is
 * any string.
 */
export const KNOWN_ERROR_CODES = [
  "validation_failed",
  "idempotency_conflict",
  "operation_not_found",
  "not_cancellable",
  "route_not_configured",
  "pricing_not_configured",
  "fx_rate_missing",
  "no_provider_accepted",
  "ledger_inconsistent",
  "receipt_evidence_unavailable",
  "receipt_too_large",
  "receipt_already_reviewed",
  "receipt_review_in_progress",
  "receipt_url_expired",
  "not_awaiting_confirmation",
  "dependency_unavailable",
  "not_found",
  "slot_settled",
  "read_capacity_exhausted",
  "flexible_route_not_pool",
  "internal",
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
] as const;
/** One of the documented error codes. */
export type KnownErrorCode = (typeof KNOWN_ERROR_CODES)[number];
/** A documented code, or another string from a newer gateway. */
export type ErrorCode = KnownErrorCode | (string & {});
