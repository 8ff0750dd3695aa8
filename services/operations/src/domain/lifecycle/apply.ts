import { Decimal } from "@gw/money";
import type { OperationRow } from "../model.ts";
import {
  AlreadyTerminalError,
  ConcurrentChangeError,
  DependencyUnavailableError,
  type DomainError,
  IdempotencyConflictError,
  LifecycleViolationError,
  NotAwaitingConfirmationError,
  NotCancellableError,
  NotRoutedError,
} from "./errors.ts";
import {
  allows,
  type FactKind,
  FINAL_STATES,
  hasTransitions,
  type LifecycleState,
  STORED_STATUS,
  TRANSITIONS,
} from "./table.ts";

/** A completed part of an operation (a provider's leg, a receipt, a pool contribution). */
export interface Leg {
  /** The leg's id at its source (the provider's leg id, `receipt:<id>`, `pool:<payin>`). */
  id: string;
  amount: string;
  /** The receipt proving it, for a receipt-proven contribution. */
  receiptId?: string;
  completedAt?: Date;
}

/** What the lifecycle reads of an operation: its row's lifecycle columns and its legs. */
export type LifecycleOperation = Pick<
  OperationRow,
  | "id"
  | "type"
  | "status"
  | "provider"
  | "request_hash"
  | "expected_amount"
  | "actual_amount"
  | "cancel_requested"
  | "cancelled_by_command"
  | "manual_check_reason"
  | "review_started_at"
> & { legs: readonly Leg[] };

/** The columns a transition of the lifecycle may set. */
export type LifecyclePatch = Partial<
  Pick<
    OperationRow,
    | "status"
    | "request_hash"
    | "provider"
    | "receipt_required"
    | "actual_amount"
    | "cancel_requested"
    | "cancelled_by_command"
    | "cancel_reason"
    | "manual_check_reason"
    | "review_started_at"
  >
>;

/** A review's verdict, from the receipts service (on a receipt or an operator's decision). */
export interface Verdict {
  verdict: "completed" | "rejected" | "manual_check";
  receiptId: string;
  /** The amount that arrived, for `completed`. */
  amount?: string;
  /** For `manual_check`. */
  reason?: "potential_fake" | "not_terminal";
}

/** A fact that may move an operation. */
export type Fact =
  | { kind: "provider_accepted"; provider: string; receiptRequired: boolean }
  | { kind: "provider_declined"; provider: string }
  | { kind: "provider_unknown"; provider: string }
  | { kind: "routing_claimed" }
  | { kind: "refused" }
  | { kind: "cancel"; reason: string }
  | { kind: "create_adopted"; type: "payment" | "payout"; requestHash: string }
  | { kind: "provider_completed"; provider: string; legs: readonly Leg[] }
  | { kind: "provider_rejected"; provider: string }
  | ({ kind: "receipt_reviewed" } & Verdict)
  | ({ kind: "operator_reviewed" } & Verdict)
  | { kind: "review_started"; at: Date }
  | { kind: "review_abandoned" }
  | { kind: "expired" }
  | { kind: "refusal_retried" }
  | { kind: "refusal_announced" }
  | { kind: "handed_off"; provider: string; from: string; contributions?: readonly Leg[] };

/** A change to write: the transition taken, the columns it sets and the legs it adds. */
export interface Change {
  from: LifecycleState;
  to: LifecycleState;
  fact: FactKind;
  patch: LifecyclePatch;
  /** Legs to record with the change (a leg already recorded under the same id is kept). */
  legs: Leg[];
}

/** What a fact does: the change to write (null: nothing to write) and the events it queues. */
export interface Applied {
  change: Change | null;
  events: string[];
}

/** The lifecycle state of an operation, from its stored columns. */
export function stateOf(op: Pick<OperationRow, "status" | "provider" | "request_hash">): LifecycleState {
  if (op.status === "cancelled" && op.request_hash === null) return "cancel_placeholder";
  if (op.status === "rejected" && op.provider === null) return "refused";
  return op.status;
}

const sum = (legs: readonly Leg[]) => legs.reduce((s, l) => s.plus(l.amount), new Decimal(0));

/** The legs after recording `added`: a leg already recorded under the same id is kept as it was. */
function withLegs(legs: readonly Leg[], added: readonly Leg[]): { all: Leg[]; fresh: Leg[] } {
  const seen = new Set(legs.map((l) => l.id));
  const fresh = added.filter((l) => !seen.has(l.id) && seen.add(l.id));
  return { all: [...legs, ...fresh], fresh };
}

/**
 * Applies `fact` to `op`, purely: the change to write and the events it queues, or the
 * domain error that refuses it. Every change lands on a row of the lifecycle table (an
 * outcome outside it throws: that is a bug in this function, not in the caller). A fact
 * that changes nothing (a declined provider during the cascade, a repeated verdict)
 * answers `change: null`.
 */
export function apply(op: LifecycleOperation, fact: Fact): Applied | DomainError {
  const from = stateOf(op);
  const refusal = refuse(op, from, fact);
  if (refusal) return refusal;
  const outcome = decide(op, from, fact);
  if (!("to" in outcome)) return outcome;
  const { to, patch = {}, legs = [], write = true } = outcome;
  if (!allows(from, fact.kind, to))
    throw new Error(`lifecycle: apply produced ${from} → ${to} on ${fact.kind}, which the table lacks`);
  if (!write) return { change: null, events: [] };
  // The table is the one source of what a transition emits.
  const emits = EMITS.get(`${from}|${fact.kind}|${to}`) === true;
  return {
    change: { from, to, fact: fact.kind, patch, legs },
    events: emits ? [`${op.type}.${STORED_STATUS[to]}`] : [],
  };
}

/**
 * `apply` for a caller that has not read the operation's legs: its answer when the fact's
 * decision did not look at them (an acceptance, a cancel), undefined when it did (read
 * them and call `apply`). Observed rather than listed, so a rule that starts reading the
 * legs falls back by itself.
 */
export function applyWithoutLegs(
  op: Omit<LifecycleOperation, "legs">,
  fact: Fact,
): Applied | DomainError | undefined {
  let read = false;
  const blind = Object.defineProperty({ ...op }, "legs", {
    enumerable: true,
    get: () => {
      read = true;
      return [];
    },
  }) as LifecycleOperation;
  const applied = apply(blind, fact);
  return read ? undefined : applied;
}

const EMITS = new Map(TRANSITIONS.map((r) => [`${r.from}|${r.fact}|${r.to}`, r.emits]));

/** The refusals that do not depend on the fact's details: wrong provider, final state, no row. */
function refuse(op: LifecycleOperation, from: LifecycleState, fact: Fact): DomainError | undefined {
  if (
    (fact.kind === "provider_completed" || fact.kind === "provider_rejected") &&
    op.provider !== fact.provider
  )
    return new NotRoutedError(`operation ${op.id} is not routed to ${fact.provider}`);
  if (fact.kind === "cancel" && op.type !== "payment")
    return new NotCancellableError("payouts cannot be cancelled");
  if (fact.kind === "create_adopted" && fact.type !== "payment")
    return new IdempotencyConflictError("merchant_operation_id was already used with a different request");
  if (hasTransitions(from, fact.kind)) return undefined;
  // A verdict for a payment that left review (or never entered it) is the caller's 412,
  // whatever state it is in now.
  if (fact.kind === "receipt_reviewed" || fact.kind === "operator_reviewed")
    return new NotAwaitingConfirmationError(
      op.type === "payment"
        ? `the payment is ${op.status}, not awaiting confirmation`
        : "a payout takes no confirmation",
    );
  if (FINAL_STATES.has(from)) return new AlreadyTerminalError(`operation ${op.id} is already ${op.status}`);
  if (fact.kind === "cancel") return new NotCancellableError(`a payment in ${op.status} cannot be cancelled`);
  return new LifecycleViolationError(op.id, from, "?", fact.kind);
}

interface Outcome {
  to: LifecycleState;
  patch?: LifecyclePatch;
  legs?: Leg[];
  /** False when the fact changes nothing that is stored. */
  write?: boolean;
}

/** The outcome of a fact the table has rows for in `from`. */
function decide(op: LifecycleOperation, from: LifecycleState, fact: Fact): Outcome | DomainError {
  switch (fact.kind) {
    case "provider_accepted":
      if (op.cancel_requested)
        return {
          to: "cancelled",
          patch: { status: "cancelled", cancelled_by_command: true, provider: fact.provider },
        };
      if (op.type === "payment" && fact.receiptRequired)
        return {
          to: "awaiting_confirmation",
          patch: { status: "awaiting_confirmation", provider: fact.provider, receipt_required: true },
        };
      return {
        to: "pending",
        patch: { status: "pending", provider: fact.provider, receipt_required: fact.receiptRequired },
      };
    case "provider_declined":
    case "provider_unknown":
      return { to: "routing", write: false };
    case "routing_claimed":
      return { to: "routing" };
    case "refused":
      if (op.cancel_requested)
        return { to: "cancelled", patch: { status: "cancelled", cancelled_by_command: true } };
      return { to: "refused", patch: { status: "rejected" } };
    case "cancel":
      if (from === "routing")
        return { to: "routing", patch: { cancel_requested: true, cancel_reason: fact.reason } };
      // A refused create's cancel also marks the request cancelled, so a retry answers it.
      return {
        to: "cancelled",
        patch: {
          status: "cancelled",
          ...(from === "refused" ? { cancel_requested: true } : {}),
          cancelled_by_command: true,
          cancel_reason: fact.reason,
        },
      };
    case "create_adopted":
      // The create's request is recorded: the row is the cancelled payment it answers.
      return { to: "cancelled", patch: { request_hash: fact.requestHash } };
    case "provider_completed": {
      const { all, fresh } = withLegs(op.legs, fact.legs);
      // A provider that reports no legs completed the expected amount (receipts show the
      // part no leg accounts for as one contribution without a receipt).
      const actual = fact.legs.length > 0 ? sum(all) : new Decimal(op.expected_amount ?? "0");
      return {
        to: "completed",
        patch: { status: "completed", actual_amount: actual.toFixed(2) },
        legs: fresh,
      };
    }
    case "provider_rejected":
      // A pool payout the pool already paid part of ends with what was paid, never
      // `rejected` (that would return the whole reserve to the shop).
      if (op.type === "payout" && op.legs.length > 0 && from === "pending")
        return { to: "completed", patch: { status: "completed", actual_amount: sum(op.legs).toFixed(2) } };
      return { to: "rejected", patch: { status: "rejected" } };
    case "receipt_reviewed":
      return review(op, from, fact);
    case "operator_reviewed":
      // An operator approves or rejects; the receipts service answers nothing else for a decision.
      if (fact.verdict === "manual_check")
        return new DependencyUnavailableError("an operator's decision came back without a verdict");
      return review(op, from, fact);
    case "review_started":
      return { to: from, patch: { review_started_at: fact.at } };
    case "review_abandoned":
      return { to: from, patch: { review_started_at: null } };
    case "expired":
      // A receipt under review keeps the payment (and its pool slot) until its verdict.
      if (op.review_started_at)
        return new ConcurrentChangeError(`operation ${op.id} has a receipt under review`);
      return { to: "rejected", patch: { status: "rejected" } };
    case "refusal_retried":
      return { to: "routing", patch: { status: "routing" } };
    case "refusal_announced":
      return { to: "refused" };
    case "handed_off":
      if (op.type !== "payout" || op.provider !== fact.from)
        return new LifecycleViolationError(
          op.id,
          from,
          from,
          "handed_off of an operation the pool does not hold",
        );
      // The pool's contributions so far become legs; the amount is settled at completion.
      return {
        to: "pending",
        patch: { provider: fact.provider },
        legs: withLegs(op.legs, fact.contributions ?? []).fresh,
      };
  }
}

function review(op: LifecycleOperation, from: LifecycleState, v: Verdict): Outcome | DomainError {
  if (v.verdict === "completed") {
    const amount = new Decimal(v.amount ?? "0");
    if (!amount.isFinite() || amount.lte(0))
      return new DependencyUnavailableError("a completed review without an amount");
    const { all, fresh } = withLegs(op.legs, [
      { id: `receipt:${v.receiptId}`, amount: amount.toFixed(2), receiptId: v.receiptId },
    ]);
    return {
      to: "completed",
      patch: {
        status: "completed",
        actual_amount: sum(all).toFixed(2),
        manual_check_reason: null,
        review_started_at: null,
      },
      legs: fresh,
    };
  }
  if (v.verdict === "rejected")
    return {
      to: "rejected",
      patch: { status: "rejected", manual_check_reason: null, review_started_at: null },
    };
  const reason = v.reason === "not_terminal" ? "not_terminal" : "potential_fake";
  if (from === "manual_check" && op.manual_check_reason === reason && !op.review_started_at)
    return { to: "manual_check", write: false };
  return {
    to: "manual_check",
    patch: { status: "manual_check", manual_check_reason: reason, review_started_at: null },
  };
}
