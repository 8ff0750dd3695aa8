import { metricsRegistry } from "@gw/rpc";
import { createMiddleware } from "hono/factory";
import { Counter, Gauge, Histogram } from "prom-client";
import type { EdgeEnv } from "./env.ts";
import { ApiError } from "./errors.ts";

const inFlightGauge = new Gauge({
  name: "edge_admission_in_flight",
  help: "Merchant API requests being served by this edge replica.",
  registers: [metricsRegistry],
});
const queuedGauge = new Gauge({
  name: "edge_admission_queued",
  help: "Merchant API requests waiting for a slot on this edge replica.",
  registers: [metricsRegistry],
});
const shedCounter = new Counter({
  name: "edge_admission_shed_total",
  help: "Merchant API requests refused without being served, by reason (queue_full, queue_timeout: 503; key_share: 429).",
  labelNames: ["reason"],
  registers: [metricsRegistry],
});
const waitHistogram = new Histogram({
  name: "edge_admission_wait_seconds",
  help: "Time merchant API requests waited for a slot before being served.",
  buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [metricsRegistry],
});

export interface AdmissionLimits {
  /** Requests served at once; the rest wait. */
  maxInFlight: number;
  /** Requests that may wait; one more is shed at once. */
  maxQueue: number;
  /** How long a request may wait for a slot before it is shed. */
  queueTimeoutMs: number;
  /**
   * Requests one API key may have in the edge at once, served or waiting; one more is
   * answered 429 at once. Below `maxInFlight`, so that one shop's burst or slow requests
   * leave slots to the others. Absent: no per-key share.
   */
  maxInFlightPerKey?: number;
}

/**
 * The defaults of `MAX_IN_FLIGHT`, `MAX_QUEUE`, `QUEUE_TIMEOUT_MS` and
 * `MAX_IN_FLIGHT_PER_KEY`: a key may hold a quarter of the slots, so three shops at
 * their share still leave a quarter to every other shop.
 */
export const DEFAULT_ADMISSION = {
  maxInFlight: 64,
  maxQueue: 256,
  queueTimeoutMs: 1_000,
  maxInFlightPerKey: 16,
} satisfies AdmissionLimits;

/** Why a request was not admitted. */
export type ShedReason = "queue_full" | "queue_timeout" | "key_share";

interface Waiter {
  admit: () => void;
  timer: NodeJS.Timeout;
}

/**
 * Admission control for one edge replica: at most `maxInFlight` requests are served at
 * once, at most `maxQueue` more wait in arrival order, each for at most `queueTimeoutMs`.
 * A request beyond that is refused before anything of it runs, so under overload the
 * edge answers the excess at once with `503` and `Retry-After` instead of letting every
 * request slow down until clients time out without an answer (and retry blindly).
 *
 * A refused request has done nothing: the merchant retries it with the same
 * `merchant_operation_id`, as after any `503`.
 */
export class Admission {
  readonly #limits: AdmissionLimits;
  #inFlight = 0;
  readonly #queue: Waiter[] = [];
  /** Requests of each API key in the edge (served or waiting); a key leaves the map at 0. */
  readonly #perKey = new Map<string, number>();

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Seconds a shed client is told to wait: the queue's timeout rounded up, at least 1. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.#limits.queueTimeoutMs / 1000));
  }

  /**
   * Resolves with a release function once the request holds a slot, or with the reason
   * it was shed. The caller must call the release function exactly once when done.
   * With `key` (the request's API key) and a per-key share, a key already holding its
   * share is shed at once (`key_share`), before it takes a slot or a place in the queue.
   */
  async enter(key?: string): Promise<{ release: () => void } | { shed: ShedReason }> {
    const share = this.#limits.maxInFlightPerKey;
    if (key === undefined || share === undefined) return this.#enter();
    const held = this.#perKey.get(key) ?? 0;
    if (held >= share) return { shed: "key_share" };
    this.#perKey.set(key, held + 1);
    const leave = () => {
      const left = (this.#perKey.get(key) ?? 1) - 1;
      if (left <= 0) this.#perKey.delete(key);
      else this.#perKey.set(key, left);
    };
    const entry = await this.#enter();
    if ("shed" in entry) {
      leave();
      return entry;
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        leave();
        entry.release();
      },
    };
  }

  #enter(): Promise<{ release: () => void } | { shed: ShedReason }> {
    if (this.#inFlight < this.#limits.maxInFlight && this.#queue.length === 0) {
      this.#take();
      return Promise.resolve({ release: this.#releaser() });
    }
    if (this.#queue.length >= this.#limits.maxQueue) return Promise.resolve({ shed: "queue_full" });
    return new Promise((resolve) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(waiter.timer);
          this.#take();
          resolve({ release: this.#releaser() });
        },
        timer: setTimeout(() => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          queuedGauge.set(this.#queue.length);
          resolve({ shed: "queue_timeout" });
        }, this.#limits.queueTimeoutMs),
      };
      this.#queue.push(waiter);
      queuedGauge.set(this.#queue.length);
    });
  }

  #take(): void {
    this.#inFlight++;
    inFlightGauge.set(this.#inFlight);
  }

  /** A release that frees the slot once, handing it to the longest waiter if any. */
  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
      inFlightGauge.set(this.#inFlight);
      const next = this.#queue.shift();
      queuedGauge.set(this.#queue.length);
      next?.admit();
    };
  }
}

/**
 * The middleware: admits the request through `admission` or answers `503 overloaded` with
 * `Retry-After`, or `429 rate_limited` when its API key already holds its share. The
 * share is counted by the key as sent, before the key is looked up (shedding must cost
 * nothing): a request without a key is left to the key check (401). The slot is held
 * until the response is ready.
 */
export function admissionControl(admission: Admission) {
  return createMiddleware<EdgeEnv>(async (c, next) => {
    const started = performance.now();
    const entry = await admission.enter(c.req.header("x-api-key") || undefined);
    if ("shed" in entry) {
      shedCounter.inc({ reason: entry.shed });
      if (entry.shed === "key_share")
        throw new ApiError(
          429,
          "rate_limited",
          "this API key has as many requests in progress as it may; retry after the Retry-After delay",
          undefined,
          { retryAfterSeconds: 1 },
        );
      throw new ApiError(
        503,
        "overloaded",
        "the gateway is busy; retry after the Retry-After delay",
        undefined,
        {
          retryAfterSeconds: admission.retryAfterSeconds,
        },
      );
    }
    waitHistogram.observe((performance.now() - started) / 1000);
    try {
      await next();
    } finally {
      entry.release();
    }
  });
}
