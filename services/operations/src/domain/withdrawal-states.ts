import type { Move, StateMachine } from "./state-machine.ts";

/**
 * A withdrawal at a provider (`operations.withdrawals`, one row per operation and
 * provider) as one table. A withdrawal is written `asking`, by a cancel's committed event
 * or by a create that passes a provider over whose answer to a payin was unknown
 * (`passed_over`); the driver (`WithdrawalDriver`) ends it with the provider's answer.
 * Only a passed-over row is asked again: by a create passing that provider over again, or
 * by a cancel, which makes it its own (no longer passed over).
 */
export const WITHDRAWAL_STATES = [
  "asking",
  "withdrawn",
  "not_found",
  "final",
  "not_supported",
  "gave_up",
  "held",
] as const;

/** One state of a withdrawal. */
export type WithdrawalState = (typeof WITHDRAWAL_STATES)[number];

/** The states that end an ask: what `WithdrawalRepository.end` records. */
export type WithdrawalEnd = Exclude<WithdrawalState, "asking">;

/** What moves a withdrawal. */
export type WithdrawalEvent =
  | "unanswered"
  | "withdrawn"
  | "not_found"
  | "final"
  | "not_supported"
  | "gave_up"
  | "held"
  | "passed_over_again"
  | "cancelled";

/** The rows the re-asking moves apply to. */
export const PASSED_OVER = "passed_over";

const m = (
  from: WithdrawalState,
  event: WithdrawalEvent,
  to: WithdrawalState,
  when: string,
  only?: string,
): Move<WithdrawalState, WithdrawalEvent> =>
  only ? { from, event, to, when, only } : { from, event, to, when };

const ENDS: readonly Move<WithdrawalState, WithdrawalEvent>[] = [
  m("asking", "unanswered", "asking", "no definite answer: asked again after a backoff"),
  m("asking", "withdrawn", "withdrawn", "the provider withdrew it: no money will move"),
  m("asking", "not_found", "not_found", "the provider has no record of it: no money will move"),
  m("asking", "final", "final", "the provider decided it first; its result is applied like its callback"),
  m("asking", "not_supported", "not_supported", "the provider offers no withdrawal"),
  m("asking", "gave_up", "gave_up", "the attempts are spent, or the provider is not configured"),
  m("asking", "held", "held", "a passed-over payin that provider holds now: left there", PASSED_OVER),
];

/** A passed-over row, in any state, is asked again from the start. */
const REASKS: readonly Move<WithdrawalState, WithdrawalEvent>[] = WITHDRAWAL_STATES.flatMap((from) => [
  m(from, "passed_over_again", "asking", "a create passes that provider over again", PASSED_OVER),
  m(from, "cancelled", "asking", "a cancel makes the passed-over row its own", PASSED_OVER),
]);

export const WITHDRAWAL_MACHINE: StateMachine<WithdrawalState, WithdrawalEvent> = {
  table: "withdrawals",
  states: WITHDRAWAL_STATES,
  initial: "asking",
  terminal: new Set<WithdrawalState>(WITHDRAWAL_STATES.filter((s) => s !== "asking")),
  moves: [...ENDS, ...REASKS],
};
