import type { ProviderConfig } from "../connectors/connector.ts";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import type { CreateDeps } from "./create-deps.ts";
import { record } from "./record.ts";
import { route } from "./routing.ts";

/**
 * A `routing` row resumed by another driver once its own is gone: taken over (by the
 * database's clock) and driven on from the stored cascade position. A create whose key
 * has such a row takes it over (`claimAndRoute`, steps/create.ts), and so does the
 * reconciler (`reroute`).
 */

/** A create's deadline plus this much (by the database's clock) before another driver takes its routing over. */
export const ROUTING_GRACE_MS = 5_000;

/**
 * Drives a `routing` row whose driver is gone and that the caller has just taken over
 * (`OperationStore.takeOverRouting` or the reconciler's lease) to its outcome, from the
 * stored cascade position, unless a cancel was accepted meanwhile: then it records
 * `cancelled` without asking any provider. Used by a retried create and by the
 * reconciler. Throws `no_provider_accepted` after recording `rejected` when nobody
 * accepted, and 503 `dependency_unavailable` while a provider's answer stays unknown.
 */
export async function drive(deps: CreateDeps, taken: OperationRow, deadline: number, signal: AbortSignal) {
  const direction = taken.type === "payment" ? "payin" : "payout";
  const routing = await deps.store.routeWithProviders(taken.shop_id, taken.method ?? "", direction);
  if (taken.cancel_requested) {
    // A cancel was accepted while the create was dead: it wins, and no provider is asked
    // to take it (one asked now could accept a payment nobody will pay or see). The
    // provider the dead create was asking may have taken a payin: it is withdrawn there,
    // the withdrawal committed with the cancellation (nothing else would ever withdraw it:
    // the cancelled row names no provider), and asked once committed.
    const asked = taken.type === "payment" ? beingAsked(deps, taken, routing?.providers ?? []) : undefined;
    const cancelled = await record(deps, taken, undefined, asked);
    if (asked && cancelled.status === "cancelled") await deps.withdrawals?.askNow(taken.id, asked);
    return cancelled;
  }
  return route(deps, taken, routing?.providers ?? [], routing?.names ?? [], deadline, signal);
}

/** The provider a create at this cascade position asks next (`route`'s order), if any. */
function beingAsked(deps: CreateDeps, row: OperationRow, providers: (ProviderConfig | undefined)[]) {
  return providers.find(
    (p) =>
      p !== undefined &&
      !row.routing_passed.includes(p.name) &&
      deps.connectorFor(p.kind) !== undefined &&
      p.methods.includes(row.method ?? ""),
  )?.name;
}

/**
 * Takes over a `routing` row (the database's clock decides that its driver is gone) and
 * drives it (`drive`); answers the row as it stands when another driver got it first.
 */
export async function reroute(deps: CreateDeps, row: OperationRow, deadline: number, signal: AbortSignal) {
  const taken = await deps.store.takeOverRouting(row, deps.budgetMs, ROUTING_GRACE_MS);
  if (!taken) {
    const now = await deps.store.findAnyById(row.id);
    if (!now) throw new DependencyUnavailableError("retry");
    return now;
  }
  return drive(deps, taken, deadline, signal);
}
