import {
  type CreateInput,
  conflict,
  operationIdFor,
  requestHash,
  routeNotConfigured,
} from "../domain/create-request.ts";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import type { ClaimRow } from "../repository/operations.ts";
import type { CreateDeps, CreateResult } from "./create-deps.ts";
import { quoteFor, quoteInput, storedQuote } from "./quote.ts";
import { resume } from "./resume.ts";
import { route } from "./routing.ts";

export type { CreateDeps, CreateResult } from "./create-deps.ts";

/**
 * Creates a payment or payout: idempotent claim, route, quote, providers in order within
 * one budget, then one statement that records the outcome with its event. A create that
 * no provider accepted is recorded as rejected (no event) and answered with an error, never
 * as a synthetic pending; a retry with the same body routes again (`retryRefused`).
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
  const deadline = Date.now() + deps.budgetMs;
  const hash = requestHash(input);
  const direction = input.type === "payment" ? "payin" : "payout";
  const forLink = options.forLink === true;
  // One NATS round trip brings the route and pricing caches up to date (both subscribe on
  // the same connection); without a route cache it overlaps the read below.
  const barrier = deps.routes?.barrier() ?? deps.pricing?.barrier();
  const claimedFromCache = await claimFromCache(
    deps,
    input,
    hash,
    direction,
    forLink,
    barrier,
    deadline,
    signal,
  );
  if (claimedFromCache) return claimedFromCache;

  // No cached route or terms (none configured, NATS down, no cache), a refused quote, or a
  // configuration changed since it was cached: every read in one statement first (a replay
  // wastes the route and the deadline, which are cheap), so a replay never waits on the ledger.
  const {
    existing,
    routing,
    deadline: storedDeadline,
    linkHoldsKey,
  } = await deps.store.createContext(input.shopId, input.mop, input.method, direction, deps.budgetMs);
  if (existing) return resume(deps, input, hash, existing, deadline, signal);
  // A flexible link holds its key (in amount_selection there is no operation row yet):
  // another request under it is another body for the same key (the spec's 412), except
  // for the link's own payment.
  if (linkHoldsKey && !forLink) throw conflict();
  if (!routing || routing.names.length === 0) throw routeNotConfigured(direction, input.method);
  const quote = await quoteFor(deps, input, routing.route.settlementCurrency, deadline, signal, barrier);
  const claimed = await deps.store.insert({
    ...claimRow(input, hash, quote),
    status: "routing",
    // By the database's clock: other replicas compare it with `now()` to take over.
    routing_deadline: storedDeadline,
  });
  if (!claimed) return resumeWinner(deps, input, hash, deadline, signal);
  return {
    row: await route(deps, claimed, routing.providers, routing.names, deadline, signal, !forLink),
    replayed: false,
  };
}

/**
 * A create whose route (`RouteCache`) and pricing terms are both cached claims its key with
 * its first statement, which answers a replay too (`existing`). Undefined: the create takes
 * the read path, when either is not cached (so a replay never waits on the ledger), when
 * the cached terms refuse the amount (the read answers a replay before the refusal), or
 * when the routing configuration changed since the route was cached (its invalidation was
 * lost or is late: this replica forgets its routes, and the read routes by the new one).
 */
async function claimFromCache(
  deps: CreateDeps,
  input: CreateInput,
  hash: string,
  direction: "payin" | "payout",
  forLink: boolean,
  barrier: Promise<void> | undefined,
  deadline: number,
  signal: AbortSignal,
): Promise<CreateResult | undefined> {
  // No round trip to wait for: the caches are unusable (NATS down), and the read path
  // costs fewer statements than a route loaded here and read again there.
  if (barrier === undefined) return undefined;
  const cached = await deps.routes?.get(input.shopId, input.method, direction, barrier);
  if (!cached || cached.names.length === 0) return undefined;
  const quote = await deps.pricing
    ?.quoteIfCached(quoteInput(input, cached.route.settlementCurrency), barrier)
    .catch(() => undefined);
  if (!quote) return undefined;
  const claim = await deps.store.claim(claimRow(input, hash, storedQuote(quote)), {
    budgetMs: deps.budgetMs,
    forLink,
    configVersion: cached.configVersion,
  });
  if (claim.claimed)
    return {
      // A flexible link's payment may hold the Admit its link made (`forLink`).
      row: await route(deps, claim.claimed, cached.providers, cached.names, deadline, signal, !forLink),
      replayed: false,
    };
  if (claim.configStale) deps.routes?.forget();
  if (claim.existing) return resume(deps, input, hash, claim.existing, deadline, signal);
  if (claim.linkHoldsKey && !forLink) throw conflict();
  if (claim.configStale) return undefined;
  return resumeWinner(deps, input, hash, deadline, signal);
}

/** The row a create claims: the request, its hash and its quote. */
function claimRow(input: CreateInput, hash: string, quote: ReturnType<typeof storedQuote>): ClaimRow {
  return {
    id: operationIdFor(input.shopId, input.mop),
    shop_id: input.shopId,
    merchant_id: input.merchantId,
    merchant_operation_id: input.mop,
    request_hash: hash,
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

/** A concurrent request (or a cancel) claimed the key between our read and our claim: answer as it does. */
async function resumeWinner(
  deps: CreateDeps,
  input: CreateInput,
  hash: string,
  deadline: number,
  signal: AbortSignal,
): Promise<CreateResult> {
  const winner = await deps.store.findByMop(input.shopId, input.mop);
  if (!winner) throw new DependencyUnavailableError("create raced; retry");
  return resume(deps, input, hash, winner, deadline, signal);
}
