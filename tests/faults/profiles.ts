/**
 * The provider fault profiles of the fault runs, and which invariants each run must keep.
 * This is the one place to switch on what waits for other branches' fixes: move a fault
 * from `AWAITING_FIXES` into `SHORT_RUN_FAULTS`, or an invariant into `ENFORCED`, once the
 * fix it needs has landed.
 */
import type { InvariantId } from "./conservation.ts";

/** A stage's probabilities (see services/sandbox-provider/src/faults.ts). */
type Table = Record<string, number>;
/** The stages of a sandbox fault profile. */
export interface FaultTables {
  create: Table;
  callback: Table;
  settlement: Table;
  status: Table;
  withdraw: Table;
  /** The status endpoint down (503) for `for_ms` of every `every_ms`. */
  status_down?: { every_ms: number; for_ms: number };
}

/**
 * The short run's faults: every kind the sandbox injects. Unknown create outcomes
 * (an answer after the caller's timeout, a 5xx or reset after accepting, no answer, a
 * completion before the answer) are resolved by asking the provider's status before the
 * cascade moves on; duplicated, delayed and stale callbacks; legs that add up, fall short
 * of or go above the amount (the gateway books what the provider reports); a slow,
 * failing or down status read; a decline after a delay; a withdraw that fails.
 */
export const SHORT_RUN_FAULTS: FaultTables = {
  create: {
    decline_after_delay: 0.05,
    answer_after_timeout: 0.04,
    accept_then_5xx: 0.04,
    accept_then_reset: 0.04,
    never_answer: 0.02,
    completion_before_answer: 0.04,
  },
  callback: { duplicate: 0.15, delayed: 0.1, rejection_after_completion: 0.05 },
  settlement: { split: 0.15, short: 0.05, over: 0.05 },
  status: { slow: 0.1, failing: 0.1 },
  status_down: { every_ms: 30_000, for_ms: 5_000 },
  withdraw: { failing: 0.2 },
};

/**
 * Faults that still break an invariant, each with the fix it waits for. None since the
 * unknown-outcome cascade, provider facts and withdrawals landed.
 */
export const AWAITING_FIXES: FaultTables = {
  create: {},
  callback: {},
  settlement: {},
  status: {},
  withdraw: {},
};

/** Every fault kind at once: the full `--provider-faults` run. */
export function allFaults(): FaultTables {
  const merge = (a: Table, b: Table) => ({ ...a, ...b });
  return {
    create: merge(SHORT_RUN_FAULTS.create, AWAITING_FIXES.create),
    callback: merge(SHORT_RUN_FAULTS.callback, AWAITING_FIXES.callback),
    settlement: merge(SHORT_RUN_FAULTS.settlement, AWAITING_FIXES.settlement),
    status: merge(SHORT_RUN_FAULTS.status, AWAITING_FIXES.status),
    withdraw: merge(SHORT_RUN_FAULTS.withdraw, AWAITING_FIXES.withdraw),
    ...(SHORT_RUN_FAULTS.status_down ? { status_down: SHORT_RUN_FAULTS.status_down } : {}),
  };
}

/**
 * The late-recording fault of issue 26: a provider whose queue is behind records a payout's
 * create only a minute after it arrived (longer than the whole 15 s create budget) and
 * answers `not_found` meanwhile. The gateway must not move the payout on before that
 * provider confirms a withdrawal of the key (a tombstone: the late create is refused).
 */
export const LATE_RECORDING = { slowMs: 60_000, probability: 0.3 };

/** The invariants the short run in the normal test run must keep. */
export const ENFORCED: readonly InvariantId[] = [
  "money",
  "payout_once",
  "payout_one_provider",
  "status_agrees",
  "events_settled",
  "webhooks_once",
  "provider_closed",
];
