import type { Move, StateMachine } from "./state-machine.ts";

/**
 * The hand-off of a pool payout's remainder (`operations.pool_handoffs`) as one table. A
 * hand-off is written `asking` and the driver (`HandOffDriver`) asks its candidates one at
 * a time; every write is conditional on the state it read (still `asking`, same
 * `position`), so an answer is never recorded twice.
 */
export const HANDOFF_STATES = ["asking", "accepted", "exhausted", "superseded"] as const;

/** One state of a hand-off. */
export type HandOffState = (typeof HANDOFF_STATES)[number];

/** What moves a hand-off. */
export type HandOffEvent = "unanswered" | "passed_over" | "accepted" | "exhausted" | "settled_elsewhere";

const m = (
  from: HandOffState,
  event: HandOffEvent,
  to: HandOffState,
  when: string,
): Move<HandOffState, HandOffEvent> => ({ from, event, to, when });

export const HANDOFF_MACHINE: StateMachine<HandOffState, HandOffEvent> = {
  table: "pool_handoffs",
  states: HANDOFF_STATES,
  initial: "asking",
  terminal: new Set<HandOffState>(["accepted", "exhausted", "superseded"]),
  moves: [
    m(
      "asking",
      "unanswered",
      "asking",
      "no definite answer: the same candidate is asked again after a backoff",
    ),
    m("asking", "passed_over", "asking", "the candidate declined or does not hold it: the next one is asked"),
    m("asking", "accepted", "accepted", "the candidate took the remainder"),
    m("asking", "exhausted", "exhausted", "no candidate left: nobody took it"),
    m("asking", "settled_elsewhere", "superseded", "the payout was settled meanwhile by another path"),
  ],
};
