import type { Move, StateMachine } from "./state-machine.ts";

/**
 * A provider fact (`operations.provider_facts`) as one table: recorded `open`, resolved
 * once by an operator, under its row lock (`resolveProviderFact`).
 */
export const FACT_STATES = ["open", "resolved"] as const;

/** One state of a provider fact. */
export type FactState = (typeof FACT_STATES)[number];

/** What moves a provider fact. */
export type FactEvent = "operator_resolved";

export const FACT_MACHINE: StateMachine<FactState, FactEvent> = {
  table: "provider_facts",
  states: FACT_STATES,
  initial: "open",
  terminal: new Set<FactState>(["resolved"]),
  moves: [
    {
      from: "open",
      event: "operator_resolved",
      to: "resolved",
      when: "credit_shop, return_to_payer, debit_shop or write_off, with the operator and the reason",
    } satisfies Move<FactState, FactEvent>,
  ],
};

/**
 * The value sets a fact is recorded with, as the schema's `CHECK`s list them (the same as
 * `FACT_KINDS` and `RESOLUTIONS` of the provider-fact use case; a test holds them equal):
 * why a report is a fact of its own, which way the money moved, and how an operator settled it.
 */
export const FACT_KINDS = ["late_completion", "not_routed", "slot_refused", "amount_mismatch"] as const;
export const FACT_DIRECTIONS = ["payin", "payout"] as const;
export const FACT_RESOLUTIONS = ["credit_shop", "return_to_payer", "debit_shop", "write_off"] as const;
