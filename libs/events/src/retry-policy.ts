/**
 * How a consumer retries an event it cannot apply: `maxAttempts` deliveries in all, the
 * n-th redelivery after `baseMs × 2^(n-1)` (at most `maxMs`); after the last failed
 * attempt the event is recorded in the service's `dead_letters` table and acked.
 */
export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}

/**
 * The default: 10 attempts over about 13 minutes (1 s, 2 s, ... 256 s, then 5 min), long
 * enough to ride out a dependency's restart, short enough that an event that can never
 * be applied reaches an operator the same hour.
 */
export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 10, baseMs: 1_000, maxMs: 300_000 };

/** The delay before redelivering an event that failed its `attempt`-th delivery. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  // The exponent is bounded so the arithmetic never overflows, whatever the attempt count.
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}
