/**
 * The pool's numbers and the pure arithmetic of admissible amounts, in one place.
 *
 * Amounts inside the pool are request amounts (scale 2, the spec's rule for every request
 * amount), so the interval arithmetic runs on exact integer cents (`bigint`), parsed from
 * and printed to decimal strings without ever passing through a JS number. Postgres keeps
 * them as numeric(20, 2).
 */
import type { Method } from "@gw/money";

/**
 * The smallest amount a method moves, as decimal text. After a slot, a payout's free
 * remainder is zero or at least this, and a payin below it is admitted only when it
 * closes a payout's remainder exactly. The spec leaves per-method minimums unshown; these
 * are the service's own choice.
 */
export const METHOD_MINIMUMS: Record<Method, string> = {
  WT_RUB_C2C: "100.00",
  WT_RUB_PHONE: "100.00",
};

/** Rows examined on each side of the amount by a recommendations read (the spec's limit). */
export const SIDE_SCAN_ROWS = 500;
/** Rows examined by an availability read (the spec's limit). */
export const AVAILABILITY_SCAN_ROWS = 1000;
/** Intervals returned at most (the spec's limit). */
export const MAX_INTERVALS = 200;
/** Recommendations returned by default and at most (the spec's limits). */
export const DEFAULT_RECOMMENDATIONS = 3;
export const MAX_RECOMMENDATIONS = 10;
/** The downstream budget of one read (the spec's limit). */
export const READ_BUDGET_MS = 2000;
/** Bounds of a slot's lifetime. */
export const MIN_SLOT_LIFETIME_MS = 1000;
export const MAX_SLOT_LIFETIME_MS = 24 * 3600 * 1000;

/** Scale-2 decimal text to integer cents. The text is already validated or from numeric(20, 2). */
export function toCents(text: string): bigint {
  const negative = text.startsWith("-");
  const [whole = "0", fraction = ""] = (negative ? text.slice(1) : text).split(".");
  if (fraction.length > 2) throw new Error(`amount with more than two decimals: ${text}`);
  const cents = BigInt(whole) * 100n + BigInt(fraction.padEnd(2, "0") || "0");
  return negative ? -cents : cents;
}

/** Integer cents to scale-2 decimal text, signed when negative. */
export function formatCents(cents: bigint): string {
  const sign = cents < 0n ? "-" : "";
  const abs = cents < 0n ? -cents : cents;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, "0")}`;
}

/** An inclusive range of amounts in cents; `lo === hi` allows exactly that amount. */
export interface Interval {
  lo: bigint;
  hi: bigint;
}

/**
 * The payin amounts a payout with free remainder `free` can take, within `[lo, hi]`:
 * exactly `free` (the slot closes the remainder), or any amount from the minimum up to
 * `free - minimum` (the remainder stays at least the minimum). Between them lies the gap.
 */
export function admissibleIntervals(free: bigint, minimum: bigint, lo: bigint, hi: bigint): Interval[] {
  const out: Interval[] = [];
  const from = minimum > lo ? minimum : lo;
  const upTo = free - minimum < hi ? free - minimum : hi;
  if (from <= upTo) out.push({ lo: from, hi: upTo });
  if (free >= lo && free <= hi && free > 0n) out.push({ lo: free, hi: free });
  return out;
}

/**
 * Sorts and merges intervals: overlapping ones and ones that touch at the currency's
 * step (…100.00 and 100.01…) become one, since no amount lies between them.
 */
export function mergeIntervals(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  const merged: Interval[] = [];
  for (const next of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && next.lo <= last.hi + 1n) {
      if (next.hi > last.hi) last.hi = next.hi;
    } else {
      merged.push({ ...next });
    }
  }
  return merged;
}

/** A recommended amount and whether it closes some payout's free remainder exactly. */
export interface Candidate {
  amount: bigint;
  exact: boolean;
}

const abs = (x: bigint) => (x < 0n ? -x : x);

/** `x` moved into `[lo, hi]` (bigints have no Math.min). */
export function clamp(x: bigint, lo: bigint, hi: bigint): bigint {
  if (x < lo) return lo;
  return x > hi ? hi : x;
}

/**
 * Recommendations from the free remainders seen by a scan: every remainder inside the
 * bounds is an exact candidate, and each merged interval offers its point nearest to the
 * requested amount. Ordered as the spec says: exact free remainders first, then by
 * distance from `amount` (the original one, even outside the bounds), then the lower
 * amount; duplicates are dropped and at most `limit` are returned.
 */
export function recommend(
  frees: readonly bigint[],
  intervals: readonly Interval[],
  amount: bigint,
  lo: bigint,
  hi: bigint,
  limit: number,
): Candidate[] {
  const byAmount = new Map<bigint, Candidate>();
  for (const free of frees) {
    if (free >= lo && free <= hi) byAmount.set(free, { amount: free, exact: true });
  }
  for (const interval of intervals) {
    const nearest = clamp(amount, interval.lo, interval.hi);
    if (!byAmount.has(nearest)) byAmount.set(nearest, { amount: nearest, exact: false });
  }
  return [...byAmount.values()]
    .sort((a, b) => {
      if (a.exact !== b.exact) return a.exact ? -1 : 1;
      const da = abs(a.amount - amount);
      const db = abs(b.amount - amount);
      if (da !== db) return da < db ? -1 : 1;
      return a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0;
    })
    .slice(0, limit);
}
