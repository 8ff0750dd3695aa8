import type { ProviderConfig } from "../connectors/connector.ts";
import { type CreateInput, conflict, routeNotConfigured } from "../domain/create-request.ts";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import type { OperationStore, OperationStoreCore } from "../repository/operations.ts";
import type { CreateDeps, CreateResult } from "./create-deps.ts";
import { quoteFor } from "./quote.ts";
import { notAccepted, record, unresolved } from "./record.ts";
import { route } from "./routing.ts";

/**
 * A create whose key already has a row: replayed, refused as a conflict, waited for,
 * taken over from a dead driver, or a refusal routed again.
 */

/** Answers a request whose key already has a row: replay, conflict, wait or take over. */
export async function resume(
  deps: CreateDeps,
  input: CreateInput,
  hash: string,
  row: OperationRow,
  deadline: number,
  signal: AbortSignal,
): Promise<CreateResult> {
  if (row.request_hash === null) {
    // A cancel arrived first: this create completes as a cancelled payment (spec rule 5).
    if (input.type !== "payment") throw conflict();
    const { row: adopted } = await deps.store.applyFact(
      row,
      { kind: "create_adopted", type: input.type, requestHash: hash },
      {
        data: {
          method: input.method,
          currency: input.currency,
          expected_amount: input.amount,
          client_id: input.clientId,
          client_ip: input.clientIp ?? null,
        },
      },
    );
    const now = adopted ?? (await deps.store.findByMop(input.shopId, input.mop));
    if (!now || now.request_hash !== hash) throw conflict();
    return { row: now, replayed: false };
  }
  if (row.request_hash !== hash) throw conflict();
  let current = row;
  // Whether this request saw another one's attempt running: its refusal is then our answer.
  let waited = false;
  for (;;) {
    while (current.status === "routing") {
      // The driver that claimed the key is gone (it died, or answered 503 with a provider's
      // answer unresolved) once the database's clock passed its deadline plus a grace for
      // a slow final write: this request takes the routing over and goes on from the stored
      // cascade position. Providers are idempotent on our operation id.
      const taken = await deps.store.takeOverRouting(
        current,
        Math.max(0, deadline - Date.now()),
        ROUTING_GRACE_MS,
      );
      if (taken) return { row: await drive(deps, taken, deadline, signal), replayed: false };
      if (Date.now() > deadline || signal.aborted) throw unresolved();
      waited = true;
      await new Promise((r) => setTimeout(r, 50));
      current = (await deps.store.findByMop(input.shopId, input.mop)) ?? current;
    }
    if (current.status !== "rejected" || current.provider !== null) return { row: current, replayed: true };
    // A refusal is no decision (the spec's 503): the same command routes again, unless this
    // request has just watched another attempt end so, or has no time left, or it is a
    // flexible link's payment (whose refusal is answered again).
    if (waited || Date.now() > deadline || signal.aborted || !(await isRefusedCreate(deps.store, current)))
      throw notAccepted();
    const retried = await retryRefused(deps, input, current, deadline, signal);
    if (retried) return { row: retried, replayed: false };
    // Another retry (or a cancel) changed the row first: answer as it stands now.
    current = (await deps.store.findByMop(input.shopId, input.mop)) ?? current;
  }
}

/**
 * A create that no provider accepted: `rejected` with no provider, never announced (no
 * event). A flexible link's payment is left out: its refusals keep the link's rules (a
 * retry answers the refusal again, and a payment the link announced as rejected is final).
 */
export async function isRefusedCreate(store: OperationStoreCore, row: OperationRow): Promise<boolean> {
  return (
    row.status === "rejected" &&
    row.provider === null &&
    row.request_hash !== null &&
    !(await store.isFlexiblePayment(row.id))
  );
}

/**
 * Routes a refused create again, under the same operation id (providers are idempotent on
 * it, so one that had accepted answers the same): a fresh quote and the route as it is now,
 * then the row is taken back to `routing` in one version-checked statement, so of two
 * concurrent retries only one routes (the other waits on the `routing` row, as for any
 * create in progress). A provider whose passed-over withdrawal is still asking, or ended
 * `final`, is not asked again (`notToAskAgain`): the withdrawal could withdraw the retried
 * create there, or its completion, a provider fact already, would be booked twice.
 * Undefined when the row changed first. A cancel accepted after the
 * refusal made the row `cancelled`, so it never gets here; one accepted while this routes
 * wins as for any create (`record`).
 */
async function retryRefused(
  deps: CreateDeps,
  input: CreateInput,
  row: OperationRow,
  deadline: number,
  signal: AbortSignal,
): Promise<OperationRow | undefined> {
  const direction = input.type === "payment" ? "payin" : "payout";
  const routing = await deps.store.routeWithProviders(input.shopId, input.method, direction);
  if (!routing || routing.names.length === 0) throw routeNotConfigured(direction, input.method);
  const quote = await quoteFor(deps, input, routing.route.settlementCurrency, deadline, signal);
  const taken = await deps.store.reopen(row, {
    ...quote,
    routing_deadline: await deps.store.deadlineIn(Math.max(0, deadline - Date.now())),
    // Passed over still: a provider whose withdrawal is in flight or ended with its result.
    routing_passed: await deps.store.withdrawals.notToAskAgain(row.id),
    routing_unresolved: null,
  });
  if (!taken) return undefined;
  return route(deps, taken, routing.providers, routing.names, deadline, signal);
}

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
