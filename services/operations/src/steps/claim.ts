import { isRouteConfigured } from "../domain/claim-decision.ts";
import {
  type CreateInput,
  conflict,
  type RequestColumns,
  routeNotConfigured,
} from "../domain/create-request.ts";
import type { OperationRow } from "../domain/model.ts";
import type { RouteWithProviders } from "../repository/operations.ts";
import type { CreateDeps } from "./create-deps.ts";
import { quoteFor } from "./quote.ts";
import { isRefusedCreate } from "./refusals.ts";
import { route } from "./routing.ts";

/**
 * A create's key (shop, merchant_operation_id): its load, and the writes the claim
 * decision (domain/claim-decision.ts) asks for, for `claimAndRoute` (steps/create.ts).
 * Each function reads or writes and returns; none decides what comes next.
 */

/** One create as it runs: its request, and what it computed once. */
export interface Create {
  input: CreateInput;
  hash: string;
  /** The claimed row's columns its request gives (`requestColumns`), the operation id with them. */
  request: RequestColumns;
  direction: "payin" | "payout";
  /** The create of a flexible link's own payment, which may use the key its link holds. */
  forLink: boolean;
  deadline: number;
  signal: AbortSignal;
  /** The route and pricing caches' round trip (`RouteCache.barrier`), if they are usable. */
  barrier: Promise<void> | undefined;
}

/**
 * What a load found under the key (a `ClaimFound`, what the decision reads), with what the
 * actions need: the claimed row and its route, the route and deadline the read brought,
 * the key's row.
 */
export type Loaded =
  | { kind: "claimed"; claimed: OperationRow; routing: RouteWithProviders }
  | { kind: "unclaimed"; linkHoldsKey: boolean; configStale: boolean }
  | ({
      kind: "free";
      linkHoldsKey: boolean;
      /** The routing deadline by the database's clock: other replicas compare it with `now()` to take over. */
      deadline: Date;
    } & (
      | { routeConfigured: true; routing: RouteWithProviders }
      | { routeConfigured: false; routing: RouteWithProviders | undefined }
    ))
  | { kind: "gone" }
  | { kind: "row"; row: OperationRow; refusedCreate: boolean; takeOverRefused: boolean };

/**
 * The create's one load. With the route cached (`cached`, `RouteCache`) and its pricing
 * terms cached too, the claim of the key is the create's first statement, and it answers
 * a replay as well (the key's row): `claimed`, the key's `row`, or `unclaimed` (a link
 * holds the key, the routing configuration changed since the route was cached, or another
 * request claimed the key after the claim's snapshot). A configuration changed under the
 * cached route (its invalidation was lost or is late) makes this replica forget its routes.
 *
 * Otherwise (no cached route or terms: none configured, NATS down, no cache; cached terms
 * that refuse the amount, so the read answers a replay before the refusal; or no `cached`
 * given, after a stale claim), every read in one statement (`createContext`): a replay
 * wastes the route and the deadline, which are cheap, so a replay never waits on the
 * ledger. A row under the key says whether it is a refused create of this request's body
 * (`retryable`).
 */
export async function loadClaim(
  deps: CreateDeps,
  c: Create,
  cached: RouteWithProviders | undefined,
): Promise<Loaded> {
  const { input } = c;
  if (c.barrier !== undefined && cached && cached.names.length > 0) {
    const quote = await quoteFor(deps, input, cached.route.settlementCurrency, { cachedAfter: c.barrier });
    if (quote) {
      const claim = await deps.store.claim(
        { ...c.request, ...quote },
        { budgetMs: deps.budgetMs, forLink: c.forLink, configVersion: cached.configVersion },
      );
      if (claim.claimed) return { kind: "claimed", claimed: claim.claimed, routing: cached };
      if (claim.configStale) deps.routes?.forget();
      const row = claim.existing;
      if (row)
        return {
          kind: "row",
          row,
          refusedCreate: await retryable(deps, c, row),
          takeOverRefused: false,
        };
      return { kind: "unclaimed", linkHoldsKey: claim.linkHoldsKey, configStale: claim.configStale };
    }
  }
  const { existing, routing, deadline, linkHoldsKey } = await deps.store.createContext(
    input.shopId,
    input.mop,
    input.method,
    c.direction,
    deps.budgetMs,
  );
  if (existing)
    return {
      kind: "row",
      row: existing,
      refusedCreate: await retryable(deps, c, existing),
      takeOverRefused: false,
    };
  return isRouteConfigured(routing)
    ? { kind: "free", linkHoldsKey, deadline, routeConfigured: true, routing }
    : { kind: "free", linkHoldsKey, deadline, routeConfigured: false, routing };
}

/**
 * The key's row, read again: after a lost claim (a concurrent request, or a cancel, claimed
 * the key between our read and our claim: answer as it does; none is `gone`), or after a
 * wait or a lost retry (`current` as it was when the read finds none).
 */
export async function readKey(deps: CreateDeps, c: Create, current?: OperationRow): Promise<Loaded> {
  const row = (await deps.store.findByMop(c.input.shopId, c.input.mop)) ?? current;
  if (!row) return { kind: "gone" };
  return { kind: "row", row, refusedCreate: await retryable(deps, c, row), takeOverRefused: false };
}

/**
 * Whether a row under the key is a refused create this request may route again: its own
 * body (another body is the 412 whatever the row is, so the store is not asked), and a
 * refusal (`isRefusedCreate`, a question to the store only for a refusal).
 */
const retryable = (deps: CreateDeps, c: Create, row: OperationRow) =>
  row.request_hash === c.hash ? isRefusedCreate(deps.store, row) : Promise.resolve(false);

/** The read path's claim: the quote, then the key claimed in `routing`; undefined when another request got there first. */
export async function claimFresh(
  deps: CreateDeps,
  c: Create,
  free: Extract<Loaded, { kind: "free"; routeConfigured: true }>,
): Promise<OperationRow | undefined> {
  const { deadline, signal, barrier } = c;
  const quote = await quoteFor(deps, c.input, free.routing.route.settlementCurrency, {
    deadline,
    signal,
    ...(barrier ? { barrier } : {}),
  });
  return deps.store.insert({
    ...c.request,
    ...quote,
    status: "routing",
    // By the database's clock: other replicas compare it with `now()` to take over.
    routing_deadline: free.deadline,
  });
}

/**
 * A cancel arrived first: this create completes as a cancelled payment (spec rule 5), its
 * request recorded on the cancel's placeholder (`create_adopted`). Another create that
 * adopted it first with another body is the spec's 412.
 */
export async function adoptCancelled(deps: CreateDeps, c: Create, row: OperationRow): Promise<OperationRow> {
  const { input } = c;
  const { row: adopted } = await deps.store.applyFact(
    row,
    { kind: "create_adopted", type: input.type, requestHash: c.hash },
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
  if (!now || now.request_hash !== c.hash) throw conflict();
  return now;
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
export async function retryRefused(
  deps: CreateDeps,
  c: Create,
  row: OperationRow,
): Promise<OperationRow | undefined> {
  const { input, deadline, signal } = c;
  const routing = await deps.store.routeWithProviders(input.shopId, input.method, c.direction);
  if (!isRouteConfigured(routing)) throw routeNotConfigured(c.direction, input.method);
  const quote = await quoteFor(deps, input, routing.route.settlementCurrency, { deadline, signal });
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
