/**
 * A per-key token bucket held in this process's memory: the spec's "5 requests per second
 * per shop per gateway replica", so nothing is shared between replicas. A key holds at
 * most `capacity` tokens and gets `ratePerSecond` back every second; a request takes one.
 * Keys idle long enough to be full again are forgotten, which bounds the map by the shops
 * active in the last `capacity / ratePerSecond` seconds.
 */
export class TokenBuckets {
  readonly #capacity: number;
  readonly #rate: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #lastSweep = 0;

  constructor(options: { capacity: number; ratePerSecond: number; now?: () => number }) {
    this.#capacity = options.capacity;
    this.#rate = options.ratePerSecond;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Takes a token for `key`: `{ ok: true }`, or how many whole seconds until one is back. */
  take(key: string): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const now = this.#now();
    this.#sweep(now);
    const bucket = this.#buckets.get(key) ?? { tokens: this.#capacity, at: now };
    bucket.tokens = Math.min(this.#capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.#rate);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rate)) };
  }

  /** Drops buckets that would be full by now (at most once a second). */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 1000) return;
    this.#lastSweep = now;
    const fullAfterMs = (this.#capacity / this.#rate) * 1000;
    for (const [key, bucket] of this.#buckets) {
      if (now - bucket.at >= fullAfterMs) this.#buckets.delete(key);
    }
  }
}
