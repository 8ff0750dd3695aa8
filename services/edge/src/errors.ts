import { Code, ConnectError } from "@connectrpc/connect";
import { isPublicErrorCode, type PublicErrorCode } from "@gw/api";
import { errorInfo } from "@gw/rpc";
import { DrizzleQueryError } from "drizzle-orm";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The edge's one error catalogue: how every failure a client can see becomes an HTTP
 * status and a public code in the one JSON body
 * `{"error": {"code", "message", "field"?}, "request_id"}`.
 *
 * Downstream services raise `failure(Code.X, "public_code", message, field?)`; the Connect
 * code picks the status (the spec's Errors table) and the ErrorInfo detail carries the
 * public code and field through unchanged. Errors the edge raises itself are `ApiError`s.
 * Every code is a `PublicErrorCode` (libs/api errors.ts), the one list of them.
 * Causes of unexpected errors are logged by the error handler, never sent.
 */

/** HTTP status per Connect code. Anything that says "try again later" is 503. */
export const HTTP_STATUS_BY_CONNECT_CODE: Record<Code, ContentfulStatusCode> = {
  [Code.Canceled]: 503,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 503,
  [Code.NotFound]: 404,
  // Not in the spec's table; a conflicting create is a failed precondition for the merchant.
  [Code.AlreadyExists]: 412,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 412,
  // A lost race inside a service: retrying the same command is the remedy.
  [Code.Aborted]: 503,
  [Code.OutOfRange]: 400,
  // A peer that does not know the method is a rolling-version mismatch: transient.
  [Code.Unimplemented]: 503,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** The public code used when the error carries none of its own. */
export const DEFAULT_CODE_BY_STATUS: Partial<Record<number, PublicErrorCode>> = {
  400: "validation_failed",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  412: "precondition_failed",
  413: "payload_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  500: "internal",
  503: "dependency_unavailable",
};

/** Messages for statuses whose underlying cause must not reach the client. */
const SAFE_MESSAGE_BY_STATUS: Partial<Record<number, string>> = {
  500: "internal error",
  503: "a dependency is unavailable, retry later",
};

/**
 * An error the edge answers with as is: status, public code, message and optional field.
 * `retryAfterSeconds` is sent as `Retry-After` on a `429` or `503` (1 s when not given).
 */
export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: PublicErrorCode;
  readonly field: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    status: ContentfulStatusCode,
    code: PublicErrorCode,
    message: string,
    field?: string,
    options: { retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Statuses that tell the client to come back later, so they always carry `Retry-After`. */
const RETRYABLE_STATUSES = new Set<number>([429, 503]);

/** 400 for a request field that is missing or malformed, naming the field. */
export const invalidField = (field: string | undefined, message: string) =>
  new ApiError(400, "validation_failed", message, field);

/** 404 for a resource the caller may not see or that does not exist. */
export const notFound = (message: string) => new ApiError(404, "not_found", message);

/** postgres.js and socket codes that mean the database cannot be reached right now. */
const DB_UNAVAILABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/**
 * True when the error (or its cause: drizzle wraps driver errors) says Postgres cannot be
 * reached, which is a 503 and not a bug.
 */
function isDatabaseUnavailable(err: unknown): boolean {
  // Bounded: a cause chain deeper than a few links is not one we produced.
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && DB_UNAVAILABLE.has(code)) return true;
  }
  return false;
}

/**
 * What of an unexpected error goes to the log: drizzle's query errors carry the bound
 * parameters in their message (key hashes among them), so only the driver's cause and the
 * query text are kept.
 */
export function loggableCause(err: unknown): unknown {
  if (err instanceof DrizzleQueryError) return { query: err.query, cause: err.cause };
  return err;
}

/**
 * Codes that, without ErrorInfo, come from the internal service-token check
 * (`libs/rpc/src/internal-auth.ts`): the edge's own credentials or the access policy were
 * refused, which is a fault of the gateway, never of the merchant's key.
 */
const INTERNAL_AUTH_CODES = new Set<Code>([Code.Unauthenticated, Code.PermissionDenied]);

/** Maps a gRPC error from a downstream service to the public error. */
export function fromConnectError(err: ConnectError): ApiError {
  const info = errorInfo(err);
  // A merchant's 401 and 403 come only from the edge's key check or from a domain failure
  // that says so (ErrorInfo); a refused service token must not read as "invalid api key".
  if (!info && INTERNAL_AUTH_CODES.has(err.code))
    return new ApiError(500, "internal", SAFE_MESSAGE_BY_STATUS[500]!);
  const status = HTTP_STATUS_BY_CONNECT_CODE[err.code] ?? 500;
  // A code the list does not know (a newer peer's) reads as the status's own.
  const known = info && isPublicErrorCode(info.code) ? info.code : undefined;
  const code = known ?? DEFAULT_CODE_BY_STATUS[status] ?? "internal";
  // Domain failures carry a message written for the merchant; anything without ErrorInfo
  // on a 5xx is a transport or programming error whose text is a cause, not a message.
  const safe = SAFE_MESSAGE_BY_STATUS[status];
  const message = info ? err.rawMessage : (safe ?? err.rawMessage);
  return new ApiError(status, code, message, info?.field || undefined);
}

/**
 * Turns anything thrown while serving a request into the public error. `expected` is
 * false when the error is a cause worth logging at error level (a bug or an outage).
 */
export function toApiError(err: unknown): { error: ApiError; expected: boolean } {
  if (err instanceof ApiError) return { error: err, expected: true };
  if (err instanceof ConnectError) {
    const error = fromConnectError(err);
    // Nobody accepting a create is an answer of the business, not a fault of the gateway.
    return { error, expected: error.status < 500 || error.code === "no_provider_accepted" };
  }
  if (err instanceof HTTPException) {
    const status = err.status as ContentfulStatusCode;
    // Hono raises 400 only when a validator cannot parse the JSON body.
    const code: PublicErrorCode =
      status === 400 ? "invalid_json" : (DEFAULT_CODE_BY_STATUS[status] ?? "internal");
    const message = status === 400 ? "request body is not valid JSON" : err.message || code;
    return { error: new ApiError(status, code, message), expected: status < 500 };
  }
  if (isDatabaseUnavailable(err)) {
    return {
      error: new ApiError(503, "dependency_unavailable", SAFE_MESSAGE_BY_STATUS[503]!),
      expected: false,
    };
  }
  return { error: new ApiError(500, "internal", SAFE_MESSAGE_BY_STATUS[500]!), expected: false };
}

/** The one JSON error body. */
export interface ErrorBody {
  error: { code: PublicErrorCode; message: string; field?: string };
  request_id: string;
}

/**
 * Renders an ApiError as the one JSON error body, with the request id of the context. A
 * `429` or `503` carries `Retry-After` (the error's own delay, else 1 s): every "come back
 * later" the gateway gives says when.
 */
export function errorResponse(c: Context, error: ApiError, headers?: Record<string, string>): Response {
  const body: ErrorBody = {
    error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) },
    request_id: (c.get("requestId") as string | undefined) ?? "",
  };
  if (RETRYABLE_STATUSES.has(error.status)) {
    headers = { "Retry-After": String(error.retryAfterSeconds ?? 1), ...headers };
  }
  return c.json(body, error.status, headers);
}
