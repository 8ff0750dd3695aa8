/**
 * Every public error code, stated once: what a client of the gateway can find in the one
 * error body `{"error": {"code", "message", "field"?}, "request_id"}`, with the HTTP status
 * it comes with and who can receive it. Services raise the codes `from: "service"` through
 * their error catalogues (with `failure()` of libs/rpc; the edge maps the Connect code to
 * the status, `HTTP_STATUS_BY_CONNECT_CODE` in services/edge/src/errors.ts); the edge
 * raises the codes `from: "edge"` itself (`ApiError`, which carries its status). Both
 * `failure()` and `ApiError` take only a `PublicErrorCode`, so a code misspelt anywhere
 * fails the typecheck. The edge's OpenAPI document ("Errors", `info["x-error-codes"]`) is
 * generated from this table, and the SDK's `KNOWN_ERROR_CODES` is checked against that
 * document. services/edge/src/public-errors.unit.test.ts checks each status against the
 * catalogues' Connect codes and the edge's `ApiError`s.
 */

/**
 * Who can receive a code in the error body:
 * - `merchant`: the merchant API (`/v1`, `X-API-Key`) and the receipt links it hands out
 *   (`/receipts/{receipt_id}`);
 * - `admin`: the admin API (`/admin/v1`, bearer token);
 * - `provider`: a provider's callback (`/callbacks/providers/{name}`);
 * - `probe`: the probes (`/livez`, `/healthz`, `/readyz`);
 * - `internal`: only services among themselves (a caller inside the gateway handles it);
 *   no route of the edge is known to answer it.
 * `"any"` is any route of the edge (an unknown path, a body too large, a fallback code).
 */
export type ErrorAudience = "merchant" | "admin" | "provider" | "probe" | "internal";

/** The HTTP statuses of error answers. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 410 | 412 | 413 | 415 | 429 | 500 | 503;

/** One public code: its status, who receives it, what it means. */
export interface PublicErrorSpec {
  /** Raised by a service's error catalogue (the edge may raise it too), or by the edge only. */
  readonly from: "service" | "edge";
  /** The status a client receives it with. */
  readonly status: ErrorStatus;
  /** Other statuses it is also raised with, said here rather than hidden (`meaning` says when). */
  readonly otherStatuses?: readonly ErrorStatus[];
  /**
   * The status the Connect code of a service's `failure()` maps to, when the edge's one
   * caller answers `status` instead (so a client never sees this one).
   */
  readonly rewrittenFrom?: ErrorStatus;
  readonly audience: readonly ErrorAudience[] | "any";
  /** One line for the documentation. */
  readonly meaning: string;
}

export const PUBLIC_ERRORS = {
  validation_failed: {
    from: "service",
    status: 400,
    audience: ["merchant", "admin", "provider"],
    meaning: "a request field is missing or malformed (`field` names it)",
  },
  idempotency_conflict: {
    from: "service",
    status: 412,
    audience: ["merchant", "admin"],
    meaning: "the key (`merchant_operation_id`, an adjustment id) was used with another request",
  },
  operation_not_found: {
    from: "service",
    status: 404,
    audience: ["merchant", "admin"],
    meaning: "no such operation in the caller's scope",
  },
  not_cancellable: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "the operation can no longer be cancelled (a payout, or a payment in manual_check)",
  },
  route_not_configured: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "the shop has no route for the method and direction",
  },
  pricing_not_configured: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "no pricing tier of the shop covers the amount (`field: amount`)",
  },
  fx_rate_missing: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "no rate to the route's settlement currency (`field: settlement_currency`)",
  },
  no_provider_accepted: {
    from: "service",
    status: 503,
    audience: ["merchant"],
    meaning: "no provider accepted the create within the wait; no decision, retry the same request",
  },
  provider_not_found: {
    from: "service",
    status: 404,
    audience: ["provider"],
    meaning: "the callback names a provider nobody registered",
  },
  bad_signature: {
    from: "service",
    status: 401,
    audience: ["provider"],
    meaning: "the callback's signature does not verify",
  },
  ledger_inconsistent: {
    from: "service",
    status: 500,
    audience: ["merchant", "admin"],
    meaning: "an account's balance differs from its postings",
  },
  receipt_evidence_unavailable: {
    from: "service",
    status: 503,
    audience: ["merchant", "admin"],
    meaning: "a receipt file or its links are not available now; retry later",
  },
  receipt_too_large: {
    from: "service",
    status: 413,
    otherStatuses: [400],
    audience: ["merchant"],
    meaning:
      "the receipt is over the limit: 413 from the edge's check; 400 when the receipts service's own limit " +
      "(INVALID_ARGUMENT) is below the edge's",
  },
  receipt_already_reviewed: {
    from: "service",
    status: 412,
    audience: ["merchant", "admin"],
    meaning: "the receipt's review was already decided",
  },
  receipt_review_in_progress: {
    from: "service",
    status: 412,
    audience: ["merchant", "admin"],
    meaning: "another receipt of the operation is being reviewed",
  },
  receipt_url_expired: {
    from: "service",
    status: 410,
    rewrittenFrom: 403,
    audience: ["merchant"],
    meaning:
      "the receipt link has expired (the receipts service's PERMISSION_DENIED, answered 410 by the edge)",
  },
  not_awaiting_confirmation: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "a receipt for an operation that is not awaiting one",
  },
  not_in_manual_check: {
    from: "service",
    status: 412,
    audience: ["admin"],
    meaning: "an operator's decision on a payment that is not in manual_check",
  },
  dependency_unavailable: {
    from: "service",
    status: 503,
    audience: ["merchant", "admin", "provider"],
    meaning: "a dependency did not answer, or the operation changed meanwhile; no decision, retry later",
  },
  not_found: {
    from: "service",
    status: 404,
    audience: "any",
    meaning: "no such route, or no such resource in the caller's scope",
  },
  amount_unavailable: {
    from: "service",
    status: 412,
    audience: ["internal"],
    meaning:
      "the self-matching pool cannot take this amount now (the operations service turns it into a decline)",
  },
  slot_settled: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "the payment's pool slot was already released or confirmed (a flexible link's create)",
  },
  read_capacity_exhausted: {
    from: "service",
    status: 503,
    audience: ["merchant"],
    meaning: "a pool read is already running on this replica; retry later",
  },
  flexible_route_not_pool: {
    from: "service",
    status: 412,
    audience: ["merchant"],
    meaning: "a flexible link for a shop whose payin route for the method is not entirely the pool",
  },
  flexible_link_not_found: {
    from: "service",
    status: 404,
    audience: ["internal"],
    meaning: "no flexible link with that id and credential (the hosted page renders it as its 404 page)",
  },
  dead_letter_not_found: {
    from: "service",
    status: 404,
    audience: ["admin"],
    meaning: "no such dead letter",
  },
  dead_letter_resolved: {
    from: "service",
    status: 412,
    audience: ["admin"],
    meaning: "the dead letter was already resolved",
  },
  dead_letter_retry_failed: {
    from: "service",
    status: 412,
    audience: ["admin"],
    meaning: "the dead letter's retry failed again",
  },
  provider_fact_not_found: {
    from: "service",
    status: 404,
    audience: ["admin"],
    meaning: "no such provider fact",
  },
  provider_fact_already_resolved: {
    from: "service",
    status: 412,
    audience: ["admin"],
    meaning: "the provider fact was already resolved",
  },
  provider_fact_not_creditable: {
    from: "service",
    status: 412,
    audience: ["admin"],
    meaning: "the provider fact cannot be credited",
  },
  internal: {
    from: "service",
    status: 500,
    audience: "any",
    meaning: "an internal error; the cause is logged, never sent",
  },
  invalid_json: {
    from: "edge",
    status: 400,
    audience: ["merchant", "admin"],
    meaning: "the body is not JSON, or not a JSON object",
  },
  invalid_form: {
    from: "edge",
    status: 400,
    audience: ["merchant"],
    meaning: "the body is not a valid multipart/form-data body (`/v1/confirm_payment`)",
  },
  unauthorized: {
    from: "edge",
    status: 401,
    audience: "any",
    meaning:
      "a valid admin bearer token is required (`/admin`); elsewhere, a 401 without a code of its own (fallback)",
  },
  api_key_required: {
    from: "edge",
    status: 401,
    audience: ["merchant"],
    meaning: "the X-API-Key header is required",
  },
  invalid_api_key: {
    from: "edge",
    status: 401,
    audience: ["merchant"],
    meaning: "the API key is not valid",
  },
  key_not_authorized: {
    from: "edge",
    status: 403,
    audience: ["merchant"],
    meaning: "a restricted key that does not list the route's group",
  },
  forbidden: {
    from: "edge",
    status: 403,
    audience: "any",
    meaning: "a 403 without a code of its own (fallback)",
  },
  method_not_allowed: {
    from: "edge",
    status: 405,
    audience: "any",
    meaning: "the method is not allowed on the path (`Allow` lists those that are)",
  },
  precondition_failed: {
    from: "edge",
    status: 412,
    audience: "any",
    meaning: "a 412 without a code the gateway knows (fallback, e.g. a newer service's)",
  },
  payload_too_large: {
    from: "edge",
    status: 413,
    audience: "any",
    meaning: "the body is over the route's limit",
  },
  unsupported_media_type: {
    from: "edge",
    status: 415,
    audience: ["merchant", "admin"],
    meaning: "the body is not application/json (multipart/form-data on `/v1/confirm_payment`)",
  },
  rate_limited: {
    from: "edge",
    status: 429,
    audience: ["merchant"],
    meaning:
      "the key has as many requests in progress as it may, or too many availability reads; see `Retry-After`",
  },
  overloaded: {
    from: "edge",
    status: 503,
    audience: ["merchant"],
    meaning: "the replica's whole budget is in use; see `Retry-After`",
  },
  incompatible_version: {
    from: "edge",
    status: 503,
    audience: ["merchant"],
    meaning: "a service of another version answered an availability read; retry later",
  },
  unhealthy: {
    from: "edge",
    status: 503,
    audience: ["probe"],
    meaning: "a probe's dependency is down",
  },
} as const satisfies Record<string, PublicErrorSpec>;

type Table = typeof PUBLIC_ERRORS;

/** Any code of the public error body. */
export type PublicErrorCode = keyof Table;

/** The codes services raise through their error catalogues. */
export type ServiceErrorCode = {
  [C in PublicErrorCode]: Table[C]["from"] extends "service" ? C : never;
}[PublicErrorCode];

/** The codes only the edge answers with. */
export type EdgeErrorCode = Exclude<PublicErrorCode, ServiceErrorCode>;

const CODES = Object.keys(PUBLIC_ERRORS) as PublicErrorCode[];

/** The codes services raise through their error catalogues (with `failure()` of libs/rpc). */
export const SERVICE_ERROR_CODES: readonly ServiceErrorCode[] = CODES.filter(
  (c): c is ServiceErrorCode => PUBLIC_ERRORS[c].from === "service",
);

/** The codes only the edge answers with: its own checks of the HTTP request, keys, load and probes. */
export const EDGE_ERROR_CODES: readonly EdgeErrorCode[] = CODES.filter(
  (c): c is EdgeErrorCode => PUBLIC_ERRORS[c].from === "edge",
);

/** Every status a code is raised with: its own first, then the others. */
export const statusesOf = (code: PublicErrorCode): readonly ErrorStatus[] => {
  const spec: PublicErrorSpec = PUBLIC_ERRORS[code];
  return [spec.status, ...(spec.otherStatuses ?? [])];
};

/** Whether `audience` can receive `code` (a code of `"any"` reaches every audience but `internal`). */
export const reaches = (code: PublicErrorCode, audience: ErrorAudience): boolean => {
  const spec: PublicErrorSpec = PUBLIC_ERRORS[code];
  return spec.audience === "any" ? audience !== "internal" : spec.audience.includes(audience);
};

/** The codes `audience` can receive, in the table's order. */
export const errorCodesFor = (audience: ErrorAudience): PublicErrorCode[] =>
  CODES.filter((c) => reaches(c, audience));

const ALL: ReadonlySet<string> = new Set<string>(CODES);

/** True when a code read off the wire (an ErrorInfo) is one of ours. */
export const isPublicErrorCode = (code: string): code is PublicErrorCode => ALL.has(code);
