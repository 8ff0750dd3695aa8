import type { Logger } from "@gw/log";
import { Decimal } from "@gw/money";
import type { ProviderLeg, ProviderResult } from "../connectors/connector.ts";
import { ConcurrentChangeError, ValidationError } from "../domain/lifecycle/errors.ts";
import { isTerminal, type OperationRow } from "../domain/model.ts";
import type { Tx } from "../repository/db.ts";
import type { OperationStoreCore } from "../repository/operations.ts";
import { legsTotalExcept, mismatchTotal } from "../repository/provider-facts.ts";
import { recordProviderFact } from "./provider-facts.ts";

/** What `applyProviderResult` did. */
export type ApplyOutcome = "applied" | "already_terminal" | "not_routed";

/**
 * Applies a provider's result (from its callback or from the reconciler's status
 * question) to the operation, inside `tx`: locks the row, stores the legs, and moves it
 * to `completed` (actual amount = sum of the legs) or `rejected` with its event. The row
 * lock makes a callback and the reconciler arriving together apply once: the second
 * finds the row terminal and changes nothing. A result for an operation routed to
 * another provider, or for a terminal one, changes nothing either; when it is a
 * completion, the money moved and it is recorded as a provider fact (provider-facts.ts).
 */
export async function applyProviderResult(
  deps: { store: OperationStoreCore; logger: Logger },
  tx: Tx,
  providerName: string,
  result: ProviderResult,
  source: "callback" | "reconciler",
): Promise<ApplyOutcome> {
  const row = await deps.store.lock(result.operationId, tx);
  if (!row || row.provider !== providerName) {
    // A provider that does not hold the route (one passed over in a cascade, or that we
    // never asked) completed it anyway: the money moved, so it is a fact of its own. A
    // routing row is left alone: the create may still record this provider (the caller
    // refuses the callback for now and the provider retries it).
    if (result.status === "completed" && row?.status !== "routing")
      await recordProviderFact(deps, tx, {
        provider: providerName,
        reference: result.operationId,
        operation: row,
        kind: "not_routed",
        providerStatus: "completed",
        legs: result.legs,
      });
    else
      deps.logger.warn(
        { provider: providerName, operationId: result.operationId, source, result: result.status },
        "provider result for an operation not routed to this provider",
      );
    return "not_routed";
  }
  if (isTerminal(row.status)) {
    if (result.status === "completed" && row.status !== "completed") {
      // Terminal states never change: money the provider took for an operation we
      // cancelled, rejected or expired is recorded and booked for an operator.
      await recordProviderFact(deps, tx, {
        provider: providerName,
        reference: row.id,
        operation: row,
        kind: "late_completion",
        providerStatus: "completed",
        legs: result.legs,
      });
    } else if (row.status === "completed" && result.status === "completed" && result.legs.length > 0) {
      await recordExcess(deps, tx, providerName, row, result.legs, source);
    } else if (row.status === result.status) {
      deps.logger.info({ operationId: row.id, status: row.status, source }, "provider result applied before");
    } else {
      deps.logger.warn(
        { operationId: row.id, status: row.status, result: result.status, source },
        "provider result for a terminal operation ignored",
      );
    }
    return "already_terminal";
  }
  // The lifecycle decides (lifecycle/apply.ts): a pool payout handed off to this provider
  // already holds what the pool paid into it (legs), so its rejection ends it as a
  // self-matching partial, as a hand-off nobody took does, never `rejected` (that would
  // return the whole reserve to the shop); a completion records its legs and completes with
  // every leg (or, without legs, the expected amount), the pool's contributions included.
  if (result.status === "rejected") {
    const { row: next } = await deps.store.applyFact(
      row,
      { kind: "provider_rejected", provider: providerName },
      { tx },
    );
    if (!next) throw new ConcurrentChangeError();
    return "applied";
  }
  const legs = result.legs.map((leg) => {
    const amount = new Decimal(leg.amount);
    if (!amount.isFinite() || amount.lte(0)) throw new ValidationError("leg amount");
    return { id: leg.id, amount: amount.toFixed(2), completedAt: leg.completedAt };
  });
  const { row: next } = await deps.store.applyFact(
    row,
    { kind: "provider_completed", provider: providerName, legs },
    { tx },
  );
  if (!next) throw new ConcurrentChangeError();
  return "applied";
}

/**
 * A completed operation reported completed again with legs: only what the provider's
 * reported total exceeds the part of the operation's actual amount that is its (all but
 * another provider's legs, such as the pool's) is money beyond what was settled (less
 * what earlier reports already recorded), so that much is a fact. Legs are not
 * matched by id: a receipt's review completes a payment with a `receipt:` leg, and a
 * completion without legs holds none, yet the provider's own legs carry the same money.
 */
async function recordExcess(
  deps: { store: OperationStoreCore; logger: Logger },
  tx: Tx,
  providerName: string,
  row: OperationRow,
  legs: ProviderLeg[],
  source: "callback" | "reconciler",
): Promise<void> {
  const reported = legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  // A pool payout handed off to this provider also holds the pool's contributions: they
  // are not this provider's money, so only the rest of the actual amount is its.
  const settled = new Decimal(row.actual_amount).minus(await legsTotalExcept(tx, row.id, providerName));
  const excess = reported.minus(settled).minus(await mismatchTotal(tx, row.id));
  if (!excess.isFinite() || excess.lte(0)) {
    deps.logger.info({ operationId: row.id, status: row.status, source }, "provider result applied before");
    return;
  }
  await recordProviderFact(deps, tx, {
    provider: providerName,
    reference: row.id,
    operation: row,
    kind: "amount_mismatch",
    providerStatus: "completed",
    legs,
    amount: excess,
  });
}
