import { setTimeout as sleep } from "node:timers/promises";
import { decideClaim, isRouteConfigured } from "../domain/claim-decision.ts";
import {
  type CreateInput,
  conflict,
  operationIdFor,
  requestHash,
  routeNotConfigured,
} from "../domain/create-request.ts";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import type { ClaimRow, RouteWithProviders } from "../repository/operations.ts";
import type { CreateDeps, CreateResult } from "./create-deps.ts";
import { cachedQuoteFor, quoteFor, type StoredQuote } from "./quote.ts";
import { notAccepted, unresolved } from "./record.ts";
import { isRefusedCreate } from "./refusals.ts";
import { drive, ROUTING_GRACE_MS } from "./resume.ts";
import { route } from "./routing.ts";

export type { CreateDeps, CreateResult } from "./create-deps.ts";

/** One create as it runs: its request, and what it computed once. */
interface Create {
  input: CreateInput;
  hash: string;
  /** The operation's id, a UUID v5 of (shop, merchant_operation_id): every racer, a retry and a cancel agree on it. */
  id: string;
  direction: "payin" | "payout";
  /** The create of a flexible link's own payment, which may use the key its link holds. */
  forLink: boolean;
  deadline: number;
  signal: AbortSignal;
  /** The route and pricing caches' round trip (`RouteCache.barrier`), if they are usable. */
  barrier: Promise<void> | undefined;
}

/**
 * What a load found under the key (`ClaimFound`, what the decision reads), with what the
 * actions need: the claimed row and its route, the route and deadline the read brought,
 * the key's row.
 */
type Loaded =
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
 * Creates a payment or payout: idempotent claim, route, quote, providers in order within
 * one budget, then one statement that records the outcome with its event. A create that
 * no provider accepted is recorded as rejected (no event) and answered with an error, never
 * as a synthetic pending; a retry with the same body routes again (`retryRefused`).
 *
 * It reads top to bottom: one load (the cached claim, else the read), the claim decision
 * (`decideClaim`, domain/claim-decision.ts), its action, and for a create that holds the
 * key the cascade (`route`, steps/routing.ts), which records the outcome. An action that
 * reads the key again (a wait, a lost race, a lost retry) decides again on what it read.
 */
export async function claimAndRoute(
  deps: CreateDeps,
  input: CreateInput,
  signal: AbortSignal,
  options: {
    /** The create of a flexible link's own payment, which may use the key its link holds. */
    forLink?: boolean;
  } = {},
): Promise<CreateResult> {
  const c: Create = {
    deadline: Date.now() + deps.budgetMs,
    input,
    hash: requestHash(input),
    id: operationIdFor(input.shopId, input.mop),
    direction: input.type === "payment" ? "payin" : "payout",
    forLink: options.forLink === true,
    signal,
    // One NATS round trip brings the route and pricing caches up to date (both subscribe on
    // the same connection); without a route cache it overlaps the read.
    barrier: deps.routes?.barrier() ?? deps.pricing?.barrier(),
  };
  let seen: Loaded = (await claimFromCache(deps, c)) ?? (await readContext(deps, c));
  let waited = false;
  for (;;) {
    const action = decideClaim({
      requestHash: c.hash,
      type: input.type,
      forLink: c.forLink,
      found: seen,
      waited,
      timeLeftMs: c.deadline - Date.now(),
      aborted: signal.aborted,
    });
    switch (action.kind) {
      case "route_claimed":
        return routeClaimed(deps, c, action.found.claimed, action.found.routing);
      case "route_new": {
        const claimed = await claimFresh(deps, c, action.found);
        if (claimed) return routeClaimed(deps, c, claimed, action.found.routing);
        seen = await readKey(deps, c);
        break;
      }
      case "read_context":
        seen = await readContext(deps, c);
        break;
      case "read_winner":
        seen = await readKey(deps, c);
        break;
      case "raced":
        throw new DependencyUnavailableError("create raced; retry");
      case "conflict":
        throw conflict();
      case "route_not_configured":
        throw routeNotConfigured(c.direction, input.method);
      case "adopt_cancelled":
        return { row: await adoptCancelled(deps, c, action.found.row), replayed: false };
      case "take_over": {
        const taken = await deps.store.takeOverRouting(
          action.found.row,
          Math.max(0, c.deadline - Date.now()),
          ROUTING_GRACE_MS,
        );
        if (taken) return { row: await drive(deps, taken, c.deadline, signal), replayed: false };
        seen = { ...action.found, takeOverRefused: true };
        break;
      }
      case "wait":
        waited = true;
        await sleep(50);
        seen = await readKey(deps, c, action.found.row);
        break;
      case "unresolved":
        throw unresolved();
      case "replay":
        return { row: action.found.row, replayed: true };
      case "not_accepted":
        throw notAccepted();
      case "retry_refused": {
        const retried = await retryRefused(deps, c, action.found.row);
        if (retried) return { row: retried, replayed: false };
        // Another retry (or a cancel) changed the row first: answer as it stands now.
        seen = await readKey(deps, c, action.found.row);
        break;
      }
    }
  }
}

/**
 * A create whose route (`RouteCache`) and pricing terms are both cached claims its key with
 * its first statement, which answers a replay too (the key's row). Undefined: the create
 * takes the read path, when either is not cached (so a replay never waits on the ledger),
 * or when the cached terms refuse the amount (the read answers a replay before the
 * refusal). A routing configuration changed since the route was cached (its invalidation
 * was lost or is late) makes this replica forget its routes; the read then routes by the
 * new one (`read_context`).
 */
async function claimFromCache(deps: CreateDeps, c: Create): Promise<Loaded | undefined> {
  // No round trip to wait for: the caches are unusable (NATS down), and the read path
  // costs fewer statements than a route loaded here and read again there.
  if (c.barrier === undefined) return undefined;
  const cached = await deps.routes?.get(c.input.shopId, c.input.method, c.direction, c.barrier);
  if (!cached || cached.names.length === 0) return undefined;
  const quote = await cachedQuoteFor(deps, c.input, cached.route.settlementCurrency, c.barrier);
  if (!quote) return undefined;
  const claim = await deps.store.claim(claimRow(c, quote), {
    budgetMs: deps.budgetMs,
    forLink: c.forLink,
    configVersion: cached.configVersion,
  });
  if (claim.claimed) return { kind: "claimed", claimed: claim.claimed, routing: cached };
  if (claim.configStale) deps.routes?.forget();
  if (claim.existing) return rowSeen(deps, claim.existing);
  return { kind: "unclaimed", linkHoldsKey: claim.linkHoldsKey, configStale: claim.configStale };
}

/**
 * No cached route or terms (none configured, NATS down, no cache), a refused quote, or a
 * configuration changed since it was cached: every read in one statement first (a replay
 * wastes the route and the deadline, which are cheap), so a replay never waits on the ledger.
 */
async function readContext(deps: CreateDeps, c: Create): Promise<Loaded> {
  const { existing, routing, deadline, linkHoldsKey } = await deps.store.createContext(
    c.input.shopId,
    c.input.mop,
    c.input.method,
    c.direction,
    deps.budgetMs,
  );
  if (existing) return rowSeen(deps, existing);
  return isRouteConfigured(routing)
    ? { kind: "free", linkHoldsKey, deadline, routeConfigured: true, routing }
    : { kind: "free", linkHoldsKey, deadline, routeConfigured: false, routing };
}

/**
 * The key's row, read again: after a lost claim (a concurrent request, or a cancel, claimed
 * the key between our read and our claim: answer as it does; none is `gone`), or after a
 * wait or a lost retry (`current` as it was when the read finds none).
 */
async function readKey(deps: CreateDeps, c: Create, current?: OperationRow): Promise<Loaded> {
  const row = (await deps.store.findByMop(c.input.shopId, c.input.mop)) ?? current;
  return row ? rowSeen(deps, row) : { kind: "gone" };
}

/** A row under the key, with whether it is a refused create (which asks the store only for a refusal). */
async function rowSeen(deps: CreateDeps, row: OperationRow): Promise<Loaded> {
  return { kind: "row", row, refusedCreate: await isRefusedCreate(deps.store, row), takeOverRefused: false };
}

/** The read path's claim: the quote, then the key claimed in `routing`; undefined when another request got there first. */
async function claimFresh(
  deps: CreateDeps,
  c: Create,
  free: Extract<Loaded, { kind: "free"; routeConfigured: true }>,
): Promise<OperationRow | undefined> {
  const settlement = free.routing.route.settlementCurrency;
  const quote = await quoteFor(deps, c.input, settlement, c.deadline, c.signal, c.barrier);
  return deps.store.insert({
    ...claimRow(c, quote),
    status: "routing",
    // By the database's clock: other replicas compare it with `now()` to take over.
    routing_deadline: free.deadline,
  });
}

/** The cascade, for the row this create has just claimed. */
async function routeClaimed(
  deps: CreateDeps,
  c: Create,
  claimed: OperationRow,
  routing: RouteWithProviders,
): Promise<CreateResult> {
  return {
    // A flexible link's payment may hold the Admit its link made (`forLink`): no first attempt.
    row: await route(deps, claimed, routing.providers, routing.names, c.deadline, c.signal, !c.forLink),
    replayed: false,
  };
}

/** The row a create claims: the request, its hash and its quote. */
function claimRow(c: Create, quote: StoredQuote): ClaimRow {
  const { input } = c;
  return {
    id: c.id,
    shop_id: input.shopId,
    merchant_id: input.merchantId,
    merchant_operation_id: input.mop,
    request_hash: c.hash,
    type: input.type,
    method: input.method,
    currency: input.currency,
    expected_amount: input.amount,
    client_id: input.clientId,
    client_ip: input.clientIp ?? null,
    number: input.type === "payout" ? (input.number ?? null) : null,
    name: input.type === "payout" ? (input.name ?? null) : null,
    bankname: input.type === "payout" ? (input.bankname ?? null) : null,
    ...quote,
  };
}

/**
 * A cancel arrived first: this create completes as a cancelled payment (spec rule 5), its
 * request recorded on the cancel's placeholder (`create_adopted`). Another create that
 * adopted it first with another body is the spec's 412.
 */
async function adoptCancelled(deps: CreateDeps, c: Create, row: OperationRow): Promise<OperationRow> {
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
async function retryRefused(
  deps: CreateDeps,
  c: Create,
  row: OperationRow,
): Promise<OperationRow | undefined> {
  const { input, deadline, signal } = c;
  const routing = await deps.store.routeWithProviders(input.shopId, input.method, c.direction);
  if (!isRouteConfigured(routing)) throw routeNotConfigured(c.direction, input.method);
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
