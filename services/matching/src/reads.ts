/**
 * Availability and recommendations: advisory reads of the pool under the spec's limits.
 * One read at a time per process (a try-acquire flag, never a queue), a 2 s budget per
 * read, bounded scans whose limits apply before any filtering, and at most 200 merged
 * intervals.
 */

import { readBudgetExceeded, readCapacityExhausted } from "./errors.ts";
import {
  AVAILABILITY_SCAN_ROWS,
  admissibleIntervals,
  type Candidate,
  clamp,
  formatCents,
  type Interval,
  MAX_INTERVALS,
  mergeIntervals,
  recommend,
  SIDE_SCAN_ROWS,
} from "./policy.ts";
import { type PoolStore, type ScanLists, type ScanResult, trimScan } from "./pool.ts";

/**
 * The one-active-read rule of the spec: a read takes the flag or is refused at once.
 * There is no queue, so a burst never piles up behind a slow read.
 */
export class ReadLimiter {
  #active = false;

  /** Takes the flag if it is free; false when another read holds it. */
  tryAcquire(): boolean {
    if (this.#active) return false;
    this.#active = true;
    return true;
  }

  release(): void {
    this.#active = false;
  }

  get active(): boolean {
    return this.#active;
  }
}

export type Coverage = "full" | "partial" | "none";

export interface ReadInput {
  method: string;
  currency: string;
  /** Bounds in cents, validated: 0 < lo <= hi. */
  lo: bigint;
  hi: bigint;
  minimum: bigint;
  coverage: Coverage;
}

export interface ReadResult {
  evaluatedAt: string;
  truncated: boolean;
  intervals: Interval[];
  recommendations: { amount: bigint; delta: bigint }[];
}

type PendingScan = PromiseLike<ScanLists[]> & { cancel(): void };

export class PoolReads {
  readonly #store: PoolStore;
  readonly #limiter: ReadLimiter;
  readonly #budgetMs: number;

  constructor(store: PoolStore, limiter: ReadLimiter, budgetMs: number) {
    this.#store = store;
    this.#limiter = limiter;
    this.#budgetMs = budgetMs;
  }

  /** Admissible amounts in `[lo, hi]` from the first 1,000 payouts in matching order from `lo`. */
  async availability(input: ReadInput, deadlineMs?: number): Promise<ReadResult> {
    if (input.coverage === "none") return emptyResult();
    const scan = await this.#read(
      () => this.#store.scanUp(input.method, input.currency, formatCents(input.lo), AVAILABILITY_SCAN_ROWS),
      AVAILABILITY_SCAN_ROWS,
      deadlineMs,
    );
    const merged = intervalsOf(scan, input);
    return {
      evaluatedAt: scan.evaluatedAt,
      truncated: scan.truncated || merged.length > MAX_INTERVALS,
      intervals: merged.slice(0, MAX_INTERVALS),
      recommendations: [],
    };
  }

  /**
   * Admissible amounts around `amount` from up to 500 payouts on each side of it, and
   * up to `limit` recommendations. An amount outside the bounds starts the scan at the
   * closest bound; deltas and distances still use the original amount. When more than
   * 200 intervals were seen, the 200 nearest the amount are returned (in ascending order).
   */
  async recommendations(
    input: ReadInput & { amount: bigint; limit: number },
    deadlineMs?: number,
  ): Promise<ReadResult> {
    if (input.coverage === "none") return emptyResult();
    const start = clamp(input.amount, input.lo, input.hi);
    const scan = await this.#read(
      () => this.#store.scanBothSides(input.method, input.currency, formatCents(start), SIDE_SCAN_ROWS),
      SIDE_SCAN_ROWS,
      deadlineMs,
    );
    const merged = intervalsOf(scan, input);
    const picked: Candidate[] = recommend(scan.frees, merged, input.amount, input.lo, input.hi, input.limit);
    return {
      evaluatedAt: scan.evaluatedAt,
      truncated: scan.truncated || merged.length > MAX_INTERVALS,
      intervals: nearestIntervals(merged, input.amount, MAX_INTERVALS),
      recommendations: picked.map((c) => ({ amount: c.amount, delta: c.amount - input.amount })),
    };
  }

  /**
   * Runs one scan under the limiter and the budget. The answer comes at the budget at
   * the latest (the query is cancelled in Postgres then); the flag stays taken until the
   * query has really ended, so a replica never has two reads in the database at once.
   */
  async #read(start: () => PendingScan, limit: number, deadlineMs: number | undefined): Promise<ScanResult> {
    if (!this.#limiter.tryAcquire()) {
      throw readCapacityExhausted();
    }
    const budgetMs = deadlineMs === undefined ? this.#budgetMs : Math.min(this.#budgetMs, deadlineMs);
    let query: PendingScan;
    try {
      query = start();
    } catch (err) {
      this.#limiter.release();
      throw err;
    }
    const rows = Promise.resolve(query).finally(() => this.#limiter.release());
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        query.cancel();
        reject(readBudgetExceeded());
      }, budgetMs);
    });
    // The losing side of the race must not surface as an unhandled rejection.
    rows.catch(() => {});
    try {
      return trimScan(await Promise.race([rows, timeout]), limit, new Date().toISOString());
    } finally {
      clearTimeout(timer);
    }
  }
}

function emptyResult(): ReadResult {
  return { evaluatedAt: new Date().toISOString(), truncated: false, intervals: [], recommendations: [] };
}

/** Merged admissible intervals of the rows that still admit (their window is open). */
function intervalsOf(scan: ScanResult, input: ReadInput): Interval[] {
  const all: Interval[] = [];
  for (const free of scan.frees) all.push(...admissibleIntervals(free, input.minimum, input.lo, input.hi));
  return mergeIntervals(all);
}

/** The `count` intervals closest to `amount`, in ascending order. */
function nearestIntervals(sorted: Interval[], amount: bigint, count: number): Interval[] {
  if (sorted.length <= count) return sorted;
  const distance = (i: Interval) => (amount < i.lo ? i.lo - amount : amount > i.hi ? amount - i.hi : 0n);
  // The distances fall then rise along the sorted list, so a window of `count` slides to the best place.
  let from = 0;
  while (from + count < sorted.length) {
    const leaving = sorted[from];
    const entering = sorted[from + count];
    if (leaving === undefined || entering === undefined || distance(entering) >= distance(leaving)) break;
    from++;
  }
  return sorted.slice(from, from + count);
}
