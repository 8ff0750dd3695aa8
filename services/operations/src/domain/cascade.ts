/**
 * The create cascade's routing decision, as a pure function of what is known: the route
 * (eligible providers in order), every answer each provider gave so far, the direction and
 * the budget left. No I/O, no clock: the create (`steps/routing.ts`, `route`) performs the action
 * it answers, appends the answer it got, and asks again.
 *
 * The rule (docs/architecture.md, "Create"):
 * - A provider holds the operation once it accepted it (the create's answer, or a status
 *   read of pending or a result): the operation is recorded as that provider's.
 * - A provider is out (the cascade may go on) only after a **definite** no: a decline of
 *   that create (its answer, or a status read of rejected), or a **confirmed withdrawal**
 *   (the provider tombstoned the key and said so: a late create there is refused). A
 *   provider is never asked anything again once out.
 * - Anything else is unknown: a timeout, a 5xx, an unreadable answer, and `not_found` at
 *   any age (a provider's "no record of it" says nothing about a create it may still be
 *   processing). For a **payout**, nobody after an unknown provider is asked: its status is
 *   asked with backoff, and after `NOT_FOUND_PATIENCE` answers of `not_found` its
 *   withdrawal by key, unless it said it offers none; once the budget is spent the payout stays with it (`unresolved`: 503, the
 *   reconciler goes on, and past the horizon an operator decides). A **payin** may move on
 *   at once, withdrawing it there (only the payer pays, into the requisites we show).
 * - Once the budget is spent nobody new is asked: nobody holding it, the create is refused.
 */

/** One answer a provider gave, as the cascade reads it. */
export type CascadeAnswer =
  /** The create was accepted, or a status read said pending or gave a result. */
  | "accepted"
  /** The create was declined, or a status read said rejected. */
  | "declined"
  /** A confirmed withdrawal by key (status `withdrawn`, or the withdraw call said so). */
  | "withdrawn"
  /** No definite answer (timeout, reset, 5xx, unreadable), to a create, status or withdraw. */
  | "unknown"
  /** A status read (or a withdraw) said it has no record of the key: unknown too. */
  | "not_found"
  /** The provider offers no withdrawal (or no durable one): only its status can settle it. */
  | "no_withdrawal"
  /** A payin passed over as unknown, its withdrawal recorded to be asked: out for a payin. */
  | "passed_withdrawing";

export interface CascadeState {
  /** Eligible providers, in the route's order. */
  route: readonly string[];
  /** Every answer each provider gave so far, oldest first. */
  answers: ReadonlyMap<string, readonly CascadeAnswer[]>;
  direction: "payin" | "payout";
  /** What is left of the create's budget; at or below 0 nobody new is asked anything. */
  budgetLeftMs: number;
  /**
   * How many `not_found` answers a payout's unknown provider gets before its withdrawal is
   * asked: `NOT_FOUND_PATIENCE` for the create that sent it; 1 for a later driver (a retry,
   * the reconciler), for whom a whole budget has passed since the create was sent.
   */
  notFoundPatience?: number;
}

export type CascadeAction =
  /** Send the create to this provider. */
  | { kind: "create"; provider: string }
  /** Ask this provider the operation's status. */
  | { kind: "status"; provider: string }
  /** Ask this provider to withdraw the key (a payout it answered `not_found` for). */
  | { kind: "withdraw"; provider: string }
  /** Record the operation as this provider's. */
  | { kind: "take"; provider: string }
  /** A payin this provider did not answer: pass it over, withdrawing it there. */
  | { kind: "pass_withdrawing"; provider: string }
  /** No provider holds it, and nobody is left to ask (or no budget): refuse the create. */
  | { kind: "refuse" }
  /** A payout this provider may hold, and no budget left: answer 503, it stays there. */
  | { kind: "unresolved"; provider: string };

/** What a provider's answers so far make of it. */
export type ProviderStanding = "untried" | "holds" | "out" | "unknown";

/**
 * How many `not_found` answers a payout's provider gets before its withdrawal is asked: a
 * provider whose queue is a little behind records the create meanwhile and keeps the
 * payout (the status questions are a doubling backoff apart, 200 ms to 2 s, so five span
 * 3 s after the first; with the 5 s attempt timeout, a create recorded up to 8 s after it
 * was sent stays there). Only a preference: the confirmed withdrawal is what makes moving
 * on safe, never the count.
 */
export const NOT_FOUND_PATIENCE = 5;

/** The answers that end a provider's part: a definite no. */
const DEFINITE_NO: ReadonlySet<CascadeAnswer> = new Set(["declined", "withdrawn"]);

/**
 * A provider's standing from its answers: the last definite one decides (accepted: it
 * holds the operation; declined or withdrawn: it is out); with none, unknown. For a payin,
 * a pass-over with its withdrawal recorded is out too.
 */
export function standing(answers: readonly CascadeAnswer[], direction: "payin" | "payout"): ProviderStanding {
  if (answers.length === 0) return "untried";
  for (let i = answers.length - 1; i >= 0; i--) {
    const a = answers[i] as CascadeAnswer;
    if (a === "accepted") return "holds";
    if (DEFINITE_NO.has(a)) return "out";
    if (a === "passed_withdrawing" && direction === "payin") return "out";
  }
  return "unknown";
}

/** The next thing the cascade does. */
export function nextAction(state: CascadeState): CascadeAction {
  const { route, answers, direction } = state;
  const budgetLeft = state.budgetLeftMs > 0;
  for (const provider of route) {
    const given = answers.get(provider) ?? [];
    switch (standing(given, direction)) {
      case "holds":
        return { kind: "take", provider };
      case "out":
        continue;
      case "untried":
        return budgetLeft ? { kind: "create", provider } : { kind: "refuse" };
      case "unknown": {
        if (direction === "payin") return { kind: "pass_withdrawing", provider };
        if (!budgetLeft) return { kind: "unresolved", provider };
        const last = given.at(-1);
        // A provider that keeps saying it has no record of the key is asked to withdraw it,
        // unless it offers no withdrawal: then only its status can ever settle it.
        const notFound = given.filter((a) => a === "not_found").length;
        const patience = state.notFoundPatience ?? NOT_FOUND_PATIENCE;
        if (last === "not_found" && notFound >= patience && !given.includes("no_withdrawal"))
          return { kind: "withdraw", provider };
        return { kind: "status", provider };
      }
    }
  }
  return { kind: "refuse" };
}
