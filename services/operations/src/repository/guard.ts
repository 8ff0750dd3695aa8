import { apply, type Change, stateOf } from "../domain/lifecycle/apply.ts";
import { isDomainError, LifecycleViolationError } from "../domain/lifecycle/errors.ts";
import { allowsState } from "../domain/lifecycle/table.ts";
import type { OperationRow } from "../domain/model.ts";
import type { DataPatch, OperationPatch } from "./store.ts";

/**
 * The last guard of every store's write: refuses a write that moves the row along no
 * transition of the lifecycle table (from `completed`, `rejected` or `cancelled` nothing
 * does), or that emits where the table says it does not, or not where it does: whichever
 * file asks, the status changes only as the table allows.
 */
export function assertTransition(before: OperationRow, patch: OperationPatch, emit: boolean): void {
  const from = stateOf(before);
  const to = stateOf({ ...before, ...patch });
  if (!allowsState(from, to, emit))
    throw new LifecycleViolationError(before.id, from, emit ? to : `${to} (without its event)`);
}

/** A change that adds no legs and checks none (not a completion): one statement writes it whole. */
export const writesOnlyTheRow = (change: Change) => change.legs.length === 0 && change.to !== "completed";

/**
 * The change `refusal_retried` makes to a refused create (`rejected`, no provider, never
 * announced), or the violation refusing it for any other row. Shared by both stores.
 */
export function reopenPatch(before: OperationRow, data: DataPatch): OperationPatch {
  const applied =
    stateOf(before) === "refused" ? apply({ ...before, legs: [] }, { kind: "refusal_retried" }) : undefined;
  if (!applied || isDomainError(applied) || !applied.change)
    throw new LifecycleViolationError(before.id, stateOf(before), "routing", "refusal_retried");
  return { ...data, ...applied.change.patch };
}
