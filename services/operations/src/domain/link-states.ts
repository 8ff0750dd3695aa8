import type { Move, StateMachine } from "./state-machine.ts";

/**
 * A flexible link (`operations.flexible_links`) as one table. A link is written
 * `deciding`; the attempt holding its claim decides it (`LinkRepository.decide`): the
 * create of the link, then the payer's confirmation on the hosted page. An expired link is
 * `amount_selection` past `expires_at`, not a state of its own.
 */
export const LINK_STATES = ["deciding", "amount_selection", "created", "rejected"] as const;

/** One state of a flexible link. */
export type LinkState = (typeof LINK_STATES)[number];

/** What moves a link. */
export type LinkEvent =
  | "admitted"
  | "amounts_offered"
  | "nothing_available"
  | "amount_confirmed"
  | "taken_meanwhile";

const m = (from: LinkState, event: LinkEvent, to: LinkState, when: string): Move<LinkState, LinkEvent> => ({
  from,
  event,
  to,
  when,
});

export const LINK_MACHINE: StateMachine<LinkState, LinkEvent> = {
  table: "flexible_links",
  states: LINK_STATES,
  initial: "deciding",
  terminal: new Set<LinkState>(["created", "rejected"]),
  moves: [
    m(
      "deciding",
      "admitted",
      "created",
      "the pool admitted the recommended amount (or an earlier attempt's payment exists)",
    ),
    m("deciding", "amounts_offered", "amount_selection", "the payer chooses from the amounts available"),
    m("deciding", "nothing_available", "rejected", "no amount is available"),
    m(
      "amount_selection",
      "amount_confirmed",
      "created",
      "the payer's amount was admitted: the payment is created",
    ),
    m(
      "amount_selection",
      "taken_meanwhile",
      "rejected",
      "taken in the last moment and nothing left: the payment is rejected",
    ),
  ],
};
