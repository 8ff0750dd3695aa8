import type { ErrorBody, ErrorCode } from "./types.ts";

/**
 * The gateway answered with an error: the one error body of every error answer, with its
 * HTTP status. `noDecision` is true for a `503`: the gateway decided nothing (no provider
 * accepted in time, a dependency was down, or it shed the request), so the same call may
 * be made again; for a create, with the same `merchant_operation_id` and body.
 */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  /** The HTTP status. */
  readonly status: number;
  /** The error code, e.g. `idempotency_conflict`. */
  readonly code: ErrorCode;
  /** The request field the error is about, when it is about one. */
  readonly field: string | undefined;
  /** The gateway's id of the request, for support. */
  readonly requestId: string | undefined;
  /** How long the gateway asked to wait before a retry (`Retry-After`), in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, body: ErrorBody | undefined, retryAfterMs?: number) {
    super(body?.error.message ?? `the gateway answered ${status}`);
    this.status = status;
    this.code = body?.error.code ?? `http_${status}`;
    this.field = body?.error.field;
    this.requestId = body?.request_id;
    this.retryAfterMs = retryAfterMs;
  }

  /** True for a `503`: nothing was decided; asking again is safe. */
  get noDecision(): boolean {
    return this.status === 503;
  }

  /**
   * True for a create the shop's configuration refuses (`412` with one of
   * `REFUSAL_CODES`): nothing was created, reserved or sent, and the same request answers
   * the same until an operator changes the pricing, FX rates or routes. Not worth retrying.
   */
  get refusal(): boolean {
    return this.status === 412 && (REFUSAL_CODES as readonly string[]).includes(this.code);
  }
}

/**
 * The codes of a create refused by the shop's configuration (always `412`): no pricing
 * tier covers the amount (`pricing_not_configured`, field `amount`), no FX rate to the
 * settlement currency (`fx_rate_missing`, field `settlement_currency`), no route for the
 * method (`route_not_configured`). A refusal is never a `503`: that one means no decision.
 */
export const REFUSAL_CODES = ["pricing_not_configured", "fx_rate_missing", "route_not_configured"] as const;

/** True when `err` is a `GatewayError`, and, when `code` is given, one with that code. */
export function isGatewayError(err: unknown, code?: ErrorCode): err is GatewayError {
  return err instanceof GatewayError && (code === undefined || err.code === code);
}

/**
 * No answer came (connection refused or reset, timeout, unreadable answer). The call's
 * outcome is unknown: a create may have happened. Read the operation with
 * `getOperationState({ merchant_operation_id })`, or repeat the create with the same
 * `merchant_operation_id` and body, which returns the original operation if there is one.
 */
export class GatewayUnreachableError extends Error {
  override readonly name = "GatewayUnreachableError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The `GatewayError` of an error answer, from its status, headers and body as parsed
 * (a proxy in between may answer with something other than the gateway's error body).
 */
export function gatewayErrorOf(status: number, headers: Headers, body: unknown): GatewayError {
  const error = (body as Partial<ErrorBody> | null | undefined)?.error;
  const known = typeof error?.code === "string" && typeof error.message === "string";
  return new GatewayError(
    status,
    known ? (body as ErrorBody) : undefined,
    retryAfterMs(headers.get("retry-after")),
  );
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
