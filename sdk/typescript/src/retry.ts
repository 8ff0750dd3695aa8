import { GatewayUnreachableError, retryAfterMs } from "./errors.ts";

/** How calls are repeated. Every field has a default (`DEFAULT_RETRY`). */
export interface RetryPolicy {
  /** Attempts in all, the first included; 1 turns retries off. */
  attempts: number;
  /** The first backoff when the gateway gave no `Retry-After`; it doubles per attempt (with jitter). */
  baseDelayMs: number;
  /** The longest backoff of our own. */
  maxDelayMs: number;
  /** The longest `Retry-After` waited for; a longer one ends the retries with the error. */
  maxRetryAfterMs: number;
  /** How long one attempt may take before it counts as no answer. */
  attemptTimeoutMs: number;
}

/** Four attempts, backoff from 250 ms to 5 s; the create wait of 15 s fits in one attempt. */
export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 30_000,
  attemptTimeoutMs: 30_000,
};

/**
 * What a call may repeat, decided by what repeating it does on the gateway:
 * - `idempotent`: reads, cancels and creates. A create is keyed by its
 *   `merchant_operation_id`, and every attempt sends the very same bytes, so a repeat
 *   either returns the original operation or asks the providers again for it. Repeated
 *   after a `503` (no decision), a `429`, and after no answer at all.
 * - `after_no_decision`: a receipt upload. Repeated only after a `503` or `429` (the
 *   gateway says it decided nothing); after no answer the outcome is unknown and a
 *   repeat could meet `not_awaiting_confirmation`, so the caller reads the state instead.
 */
export type RetryClass = "idempotent" | "after_no_decision";

/** The `/v1` calls that may not be repeated after no answer; every other `/v1` call may. */
const AFTER_NO_DECISION_ONLY = new Set(["/v1/confirm_payment"]);

/** Which retry class a request to `path` belongs to. */
export function retryClassOf(path: string): RetryClass {
  return AFTER_NO_DECISION_ONLY.has(path.replace(/\/+$/, "")) ? "after_no_decision" : "idempotent";
}

/** Statuses that mean "nothing was decided, ask again later". */
const NO_DECISION = new Set([429, 503]);

export interface RetryingFetchOptions {
  policy: RetryPolicy;
  fetch: (request: Request) => Promise<Response>;
  /** Waits; tests pass their own to see the delays without waiting them. */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1). */
  random?: () => number;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A `fetch` that repeats a request as `RetryPolicy` and `retryClassOf` allow. The body is
 * read once and every attempt sends those bytes with the same headers, so a repeated
 * create cannot differ from the first in its key or its body. A `Retry-After` is waited
 * as given; without one, exponential backoff with full jitter. Returns the last answer
 * (the caller turns an error status into a `GatewayError`); throws
 * `GatewayUnreachableError` when the last attempt got no answer.
 */
export function retryingFetch(options: RetryingFetchOptions): (request: Request) => Promise<Response> {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const { policy } = options;
  return async (request) => {
    const body = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    const retryClass = retryClassOf(new URL(request.url).pathname);
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= policy.attempts;
      const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)) * random();
      let response: Response;
      try {
        response = await options.fetch(
          new Request(request.url, {
            method: request.method,
            headers: request.headers,
            body,
            signal: AbortSignal.any([request.signal, AbortSignal.timeout(policy.attemptTimeoutMs)]),
          }),
        );
      } catch (err) {
        if (request.signal.aborted) throw err;
        if (last || retryClass !== "idempotent") {
          throw new GatewayUnreachableError(
            `no answer from ${request.method} ${new URL(request.url).pathname} after ${attempt} attempt(s); the outcome is unknown`,
            { cause: err },
          );
        }
        await sleep(backoff);
        continue;
      }
      if (last || !NO_DECISION.has(response.status)) return response;
      const asked = retryAfterMs(response.headers.get("retry-after"));
      if (asked !== undefined && asked > policy.maxRetryAfterMs) return response;
      // The answer is dropped for another attempt; its body is not needed.
      await response.body?.cancel();
      await sleep(asked ?? backoff);
    }
  };
}
