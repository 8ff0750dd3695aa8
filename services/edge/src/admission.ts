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
  help: "Merchant API requests answered 503 without being served, by reason (queue_full, queue_timeout).",
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
}

/** The defaults of `MAX_IN_FLIGHT`, `MAX_QUEUE` and `QUEUE_TIMEOUT_MS`. */
export const DEFAULT_ADMISSION: AdmissionLimits = { maxInFlight: 64, maxQueue: 256, queueTimeoutMs: 1_000 };

/** Why a request was not admitted. */
export type ShedReason = "queue_full" | "queue_timeout";

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
   */
  enter(): Promise<{ release: () => void } | { shed: ShedReason }> {
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
 * `Retry-After`. The slot is held until the response is ready.
 */
export function admissionControl(admission: Admission) {
  return createMiddleware<EdgeEnv>(async (_c, next) => {
    const started = performance.now();
    const entry = await admission.enter();
    if ("shed" in entry) {
      shedCounter.inc({ reason: entry.shed });
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
