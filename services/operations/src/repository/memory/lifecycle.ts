import { randomUUID } from "node:crypto";
import { Decimal } from "@gw/money";
import type { ReceiptItem } from "@gw/proto/gateway/operations/v1/operations_pb";
import { type EventStatements, operationEvent } from "../../domain/events.ts";
import { type Applied, apply, type Fact } from "../../domain/lifecycle/apply.ts";
import { isDomainError, LegsDisagreeError } from "../../domain/lifecycle/errors.ts";
import type { OperationRow } from "../../domain/model.ts";
import { receiptsOf } from "../../domain/receipts-of.ts";
import { assertTransition } from "../guard.ts";
import type { DataPatch, OperationPatch } from "../store.ts";
import { patched, type State } from "./state.ts";
import { addLeg, legRows, nextVersion } from "./tables.ts";

/** Where a lifecycle write runs: the state, the events prefix and the store's clock. */
export interface Scope {
  s: State;
  prefix: string;
  clock: () => Date;
}

/**
 * `PgOperationStore`'s `transition` (lifecycle-writes.ts) on the memory state: the table's
 * guard, the legs' check on a completion, the version check, and the event queued with
 * the row.
 */
export function transitionIn(
  { s, prefix, clock }: Scope,
  before: OperationRow,
  patch: OperationPatch,
  options: { emit: boolean; receipts?: ReceiptItem[] | undefined; statements?: EventStatements | undefined },
): OperationRow | undefined {
  assertTransition(before, patch, options.emit);
  const after: OperationRow = { ...before, ...patch, version: nextVersion(before), updated_at: clock() };
  if (after.status === "completed") {
    const legs = (s.legs.get(after.id) ?? []).reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
    if (legs.gt(after.actual_amount))
      throw new LegsDisagreeError(after.id, after.actual_amount, legs.toFixed(2));
  }
  const row = s.rows.get(before.id);
  if (!row || row.version !== before.version) return undefined;
  s.rows.set(row.id, patched(row, { ...patch, version: after.version, updated_at: after.updated_at }));
  if (options.emit)
    s.outbox.push(operationEvent(prefix, after, options.receipts, undefined, options.statements));
  return after;
}

/**
 * `OperationStoreCore.applyFact` on the memory state: `apply` decides from the row and
 * its legs, and what it decided is written as `PgOperationStore` writes it (the legs it
 * adds, then the change with its event and, on a completion, the receipts).
 */
export function applyFactIn(
  scope: Scope,
  before: OperationRow,
  fact: Fact,
  { data, statements }: { data?: DataPatch | undefined; statements?: EventStatements | undefined },
): { row: OperationRow | undefined; applied: Applied } {
  const { s, clock } = scope;
  const applied = apply({ ...before, legs: legRows(s, before.id) }, fact);
  if (isDomainError(applied)) throw applied;
  const { change, events } = applied;
  if (!change) {
    // Nothing of the lifecycle changes: the caller's own columns are still written, version-checked.
    if (!data || Object.keys(data).length === 0) return { row: before, applied };
    return { row: transitionIn(scope, before, data, { emit: false }), applied };
  }
  for (const leg of change.legs)
    addLeg(s, {
      id: randomUUID(),
      operation_id: before.id,
      provider: before.provider ?? "receipt",
      provider_leg_id: leg.id,
      amount: leg.amount,
      completed_at: leg.completedAt ?? clock(),
      receipt_id: leg.receiptId ?? null,
    });
  const patch: OperationPatch = { ...data, ...change.patch };
  const receipts =
    change.to === "completed"
      ? receiptsOf({ ...before, ...patch }, legRows(s, before.id)).receipts
      : undefined;
  const row = transitionIn(scope, before, patch, { emit: events.length > 0, receipts, statements });
  return { row, applied };
}
