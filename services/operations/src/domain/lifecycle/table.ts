import type { Status } from "../model.ts";

/**
 * The operation lifecycle as one table: its states, the facts that move them, and every
 * allowed transition with what it emits. `apply()` computes a fact's outcome and may only
 * land on a row of this table; the repository refuses any stored status change that no
 * row allows (`OperationStore.transition`), whichever file asks for it.
 */

/**
 * The lifecycle's states: the stored statuses, plus two internal states that share a
 * stored status with a public one and differ by other columns.
 * - `refused`: stored `rejected` with no provider — a create no provider accepted. It was
 *   never announced, so a retry of the same create may route it again.
 * - `cancel_placeholder`: stored `cancelled` with no request hash — a cancel that arrived
 *   before its create; the create adopts it.
 */
export const LIFECYCLE_STATES = [
  "routing",
  "pending",
  "awaiting_confirmation",
  "manual_check",
  "completed",
  "rejected",
  "cancelled",
  "refused",
  "cancel_placeholder",
] as const;

/** One state of the lifecycle. */
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];

/** The stored `status` of each lifecycle state. */
export const STORED_STATUS: Readonly<Record<LifecycleState, Status>> = {
  routing: "routing",
  pending: "pending",
  awaiting_confirmation: "awaiting_confirmation",
  manual_check: "manual_check",
  completed: "completed",
  rejected: "rejected",
  cancelled: "cancelled",
  refused: "rejected",
  cancel_placeholder: "cancelled",
};

/** States no fact leaves: nothing about such an operation changes any more. */
export const FINAL_STATES: ReadonlySet<LifecycleState> = new Set(["completed", "rejected", "cancelled"]);

/** The facts that move an operation. */
export const FACT_KINDS = [
  "provider_accepted",
  "provider_declined",
  "provider_unknown",
  "routing_claimed",
  "refused",
  "cancel",
  "create_adopted",
  "provider_completed",
  "provider_rejected",
  "receipt_reviewed",
  "operator_reviewed",
  "review_started",
  "review_abandoned",
  "expired",
  "refusal_retried",
  "refusal_announced",
  "handed_off",
] as const;

/** The kind of one fact. */
export type FactKind = (typeof FACT_KINDS)[number];

/** One allowed transition: in `from`, `fact` may lead to `to` (under `when`). */
export interface Transition {
  from: LifecycleState;
  fact: FactKind;
  to: LifecycleState;
  /** Whether the transition queues the `<type>.<stored status>` event in the same statement. */
  emits: boolean;
  when: string;
}

const t = (
  from: LifecycleState,
  fact: FactKind,
  to: LifecycleState,
  emits: boolean,
  when: string,
): Transition => ({
  from,
  fact,
  to,
  emits,
  when,
});

/** Every allowed transition. Anything not here is a `LifecycleViolationError`. */
export const TRANSITIONS: readonly Transition[] = [
  t("routing", "provider_accepted", "pending", true, "a payout, or a payment without a receipt"),
  t("routing", "provider_accepted", "awaiting_confirmation", true, "a payment whose provider asks a receipt"),
  t("routing", "provider_accepted", "cancelled", true, "a cancel was accepted while routing"),
  t("routing", "provider_declined", "routing", false, "the cascade asks the next provider"),
  t(
    "routing",
    "provider_unknown",
    "routing",
    false,
    "a payout's provider did not answer: it stays unresolved there",
  ),
  t(
    "routing",
    "routing_claimed",
    "routing",
    false,
    "a retried create or the reconciler takes over a dead create",
  ),
  t("routing", "cancel", "routing", false, "the cancel is recorded; routing ends in cancelled"),
  t("routing", "refused", "refused", false, "no provider accepted; never announced"),
  t("routing", "refused", "cancelled", true, "a cancel was accepted while routing"),

  t("pending", "provider_completed", "completed", true, "actual amount from the legs"),
  t("pending", "provider_rejected", "rejected", true, "nothing was paid into it"),
  t("pending", "provider_rejected", "completed", true, "a pool payout: completed with what the pool paid"),
  t("pending", "cancel", "cancelled", true, "a payment"),
  t("pending", "expired", "rejected", true, "the payable window closed"),
  t("pending", "handed_off", "pending", false, "a provider took a pool payout's remainder"),

  t("awaiting_confirmation", "provider_completed", "completed", true, "actual amount from the legs"),
  t("awaiting_confirmation", "provider_rejected", "rejected", true, "the provider declined it"),
  t("awaiting_confirmation", "cancel", "cancelled", true, "a payment"),
  t(
    "awaiting_confirmation",
    "expired",
    "rejected",
    true,
    "the payable window closed and no receipt is under review",
  ),
  t(
    "awaiting_confirmation",
    "review_started",
    "awaiting_confirmation",
    false,
    "a receipt went to review: no expiry until its verdict",
  ),
  t(
    "awaiting_confirmation",
    "review_abandoned",
    "awaiting_confirmation",
    false,
    "the review ended without a verdict: it may expire again",
  ),
  t("awaiting_confirmation", "receipt_reviewed", "completed", true, "the receipt proves the amount"),
  t("awaiting_confirmation", "receipt_reviewed", "rejected", true, "the receipt is refused"),
  t("awaiting_confirmation", "receipt_reviewed", "manual_check", true, "an operator must look"),
  t("awaiting_confirmation", "operator_reviewed", "completed", true, "approved with the amount that arrived"),
  t("awaiting_confirmation", "operator_reviewed", "rejected", true, "rejected"),

  t("manual_check", "provider_completed", "completed", true, "actual amount from the legs"),
  t("manual_check", "provider_rejected", "rejected", true, "the provider declined it"),
  t("manual_check", "receipt_reviewed", "completed", true, "a re-upload proves the amount"),
  t("manual_check", "receipt_reviewed", "rejected", true, "a re-upload is refused"),
  t("manual_check", "receipt_reviewed", "manual_check", true, "the reason changed"),
  t("manual_check", "operator_reviewed", "completed", true, "approved with the amount that arrived"),
  t("manual_check", "operator_reviewed", "rejected", true, "rejected"),

  t("refused", "refusal_retried", "routing", false, "the same create again: routes again (correction)"),
  t("refused", "cancel", "cancelled", true, "a payment: the cancel decides it (correction)"),
  t("refused", "refusal_announced", "refused", true, "a flexible link announces its refusal once"),

  t("cancel_placeholder", "create_adopted", "cancelled", true, "the create of a cancelled payment arrives"),
];

/** Whether the table has the transition `from --fact--> to`. */
export function allows(from: LifecycleState, fact: FactKind, to: LifecycleState): boolean {
  return TRANSITIONS.some((r) => r.from === from && r.fact === fact && r.to === to);
}

/**
 * Whether any fact leads from `from` to `to`, emitting (or not) as `emits` says: what the
 * repository checks on every write, so a status change can neither skip the table nor
 * drop (or invent) its event.
 */
export function allowsState(from: LifecycleState, to: LifecycleState, emits?: boolean): boolean {
  return TRANSITIONS.some(
    (r) => r.from === from && r.to === to && (emits === undefined || r.emits === emits),
  );
}

/** Whether any fact applies in `from` at all. */
export function hasTransitions(from: LifecycleState, fact: FactKind): boolean {
  return TRANSITIONS.some((r) => r.from === from && r.fact === fact);
}
