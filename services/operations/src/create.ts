import { createHash } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { isMethod, METHODS, parseRequestAmount } from "@gw/money";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { stringify } from "safe-stable-stringify";
import { v5 as uuidv5 } from "uuid";
import { BANKS_BY_CURRENCY } from "./banks.ts";
import type { Connector, ProviderAnswer, ProviderConfig, ProviderResult } from "./connectors/connector.ts";
import { SELF_MATCHING } from "./connectors/pool-provider.ts";
import { ledgerRefusal } from "./dependency-errors.ts";
import type { EventStatements } from "./events.ts";
import type { Fact } from "./lifecycle/apply.ts";
import {
  DependencyUnavailableError,
  IdempotencyConflictError,
  NoProviderAcceptedError,
  PricingRefusedError,
  RouteNotConfiguredError,
  ValidationError,
} from "./lifecycle/errors.ts";
import { type OperationRow, TERMINAL } from "./model.ts";
import { releaseRefusedReserve, reserveBeforeRouting } from "./payout-reserve.ts";
import type { PoolDeps } from "./pool.ts";
import { Pricing, type Quoted, type QuoteInput } from "./pricing.ts";
import { applyProviderResult } from "./provider-results.ts";
import { recordRefusal } from "./refusals.ts";
import type { ClaimRow, DataPatch, OperationPatch, OperationStore } from "./repository/operations.ts";
import type { RouteCache } from "./route-cache.ts";
import { quietPeriodMs, resolveUnknown } from "./unknown-outcome.ts";
import { recordPassedOver, type WithdrawalDriver, withdrawalLeaseMs } from "./withdrawals.ts";

/** Namespace of operation ids derived from (shop, merchant_operation_id). */
const OPERATION_NAMESPACE = "6f1c2a7e-3b5d-4c1a-9e8f-0a1b2c3d4e5f";

/**
 * The operation id of (shop, merchant_operation_id). Deriving it makes a cancel that
 * arrives before its create, a retried create and the create itself agree on one id.
 */
export const operationIdFor = (shopId: string, mop: string) =>
  uuidv5(`${shopId}\n${mop}`, OPERATION_NAMESPACE);

/** What a create request means, validated; the basis of the idempotency hash. */
export interface CreateInput {
  type: "payment" | "payout";
  shopId: string;
  merchantId: string;
  mop: string;
  clientId: string;
  clientIp: string | undefined;
  method: string;
  amount: string;
  currency: string;
  number: string | undefined;
  name: string | undefined;
  bankname: string | undefined;
}

const invalid = (field: string, message: string) => new ValidationError(message, field);

/** Validates a create request; the edge checks the same, this keeps the service safe on its own. */
export function parseCreate(req: CreateOperationRequest): CreateInput {
  const shopId = req.scope?.shopId ?? "";
  const merchantId = req.scope?.merchantId ?? "";
  if (!shopId || !merchantId) throw invalid("scope", "scope is required");
  if (req.type !== "payment" && req.type !== "payout")
    throw invalid("type", "type must be payment or payout");
  if (!req.merchantOperationId) throw invalid("merchant_operation_id", "merchant_operation_id is required");
  if (!req.clientId) throw invalid("client_id", "client_id is required");
  if (!isMethod(req.method)) throw invalid("method", "method is not supported");
  const amount = parseRequestAmount(req.amount);
  if (!amount || amount.lte(0))
    throw invalid("amount", "amount must be a positive decimal string with scale 2");
  if (METHODS[req.method].currency !== req.currency)
    throw invalid("currency", "method does not belong to currency");
  const rail = METHODS[req.method].rail;
  let number: string | undefined;
  let name: string | undefined;
  let bankname: string | undefined;
  if (req.type === "payout") {
    number = req.number?.trim();
    if (!number) throw invalid("number", "number is required for payouts");
    if (rail === "card" && !/^\d{12,19}$/.test(number))
      throw invalid("number", "number must be a card number");
    if (rail === "phone" && !/^\+?\d{10,15}$/.test(number))
      throw invalid("number", "number must be a phone number");
    name = req.name?.trim() || "аноним";
    if (rail === "phone") {
      bankname = req.bankname?.trim();
      if (!bankname) throw invalid("bankname", "bankname is required for phone payouts");
      if (!BANKS_BY_CURRENCY[req.currency]?.[bankname])
        throw invalid("bankname", "bankname is not a bank code of the method currency");
    }
  }
  return {
    type: req.type,
    shopId,
    merchantId,
    mop: req.merchantOperationId,
    clientId: req.clientId,
    clientIp: req.clientIp || undefined,
    method: req.method,
    amount: amount.toFixed(2),
    currency: req.currency,
    number,
    name,
    bankname,
  };
}

/** sha256 of the canonical request: what makes "the same body" for idempotency. */
export function requestHash(input: CreateInput): string {
  const { shopId: _s, merchantId: _m, ...body } = input;
  return createHash("sha256")
    .update(stringify(body) ?? "")
    .digest("hex");
}

export interface CreateDeps {
  store: OperationStore;
  ledger: Client<typeof LedgerService>;
  connectorFor: (kind: string) => Connector | undefined;
  callbackBaseUrl: string;
  budgetMs: number;
  attemptTimeoutMs: number;
  /** How long after a create was sent a provider's `not_found` is believed (`quietPeriodMs`). */
  notFoundQuietMs?: number | undefined;
  logger: Logger;
  /**
   * The self-matching pool, for the reconciler and flexible links (routing reaches it as
   * a provider, through `connectorFor`).
   */
  pool?: PoolDeps;
  /**
   * Asks a passed-over payin's withdrawal at once (absent: the withdrawal driver of any
   * process asks it once its lease has run out).
   */
  withdrawals?: Pick<WithdrawalDriver, "askNow">;
  /** Quotes from cached pricing terms (`Pricing.cached`); absent: every quote is the ledger's Quote. */
  pricing?: Pricing;
  /** Creates' routes, cached (`RouteCache`); absent: every create reads its route. */
  routes?: RouteCache;
}

/** The deps' pricing: the cached one, or the ledger's Quote. */
export const pricingOf = (deps: Pick<CreateDeps, "ledger" | "pricing">) =>
  deps.pricing ?? new Pricing(deps.ledger);

export type CreateResult = { row: OperationRow; replayed: boolean };

/**
 * Creates a payment or payout: idempotent claim, route, quote, providers in order within
 * one budget, then one statement that records the outcome with its event. A create that
 * no provider accepted is recorded as rejected (no event) and answered with an error, never
 * as a synthetic pending; a retry with the same body routes again (`retryRefused`).
 */
export async function createOperation(
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

/** What a create's quote is asked for. */
const quoteInput = (input: CreateInput, settlementCurrency: string): QuoteInput => ({
  shopId: input.shopId,
  method: input.method,
  direction: input.type === "payment" ? "payin" : "payout",
  amount: input.amount,
  currency: input.currency,
  settlementCurrency,
});

/** The commission and FX figures of a quote, as the row stores them. */
const storedQuote = (quote: Quoted) => ({
  settlement_currency: quote.settlementCurrency,
  fx_rate: quote.fxRate ?? null,
  fx_source: quote.fxSource ?? null,
  commission_percent: quote.tier?.percent ?? "0",
  commission_fixed: quote.tier?.fixed ?? "0",
  pricing_version: quote.pricingVersion,
});

/** The commission and FX figures of a create, as the row stores them. */
async function quoteFor(
  deps: CreateDeps,
  input: CreateInput,
  settlementCurrency: string,
  deadline: number,
  signal: AbortSignal,
  /** A pricing round trip the create started after it began (`Pricing.barrier`). */
  barrier?: Promise<void>,
) {
  const quote = await pricingOf(deps)
    .quote(
      quoteInput(input, settlementCurrency),
      { signal, timeoutMs: Math.max(1, deadline - Date.now()) },
      barrier,
    )
    .catch((err: unknown) => {
      throw passThrough(err);
    });
  return storedQuote(quote);
}

/** Answers a request whose key already has a row: replay, conflict, wait or take over. */
async function resume(
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
export async function isRefusedCreate(store: OperationStore, row: OperationRow): Promise<boolean> {
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

type Accepted = {
  provider: ProviderConfig;
  answer: Extract<ProviderAnswer, { outcome: "accepted" }>;
  /** A result the provider already reached (found by the status question), applied once recorded. */
  result?: ProviderResult;
  /**
   * Whether the pool was on the route that found the provider, when that route is the only
   * one the operation ever had (its first attempt); unknown counts as on it.
   */
  poolOnRoute?: boolean;
};

/**
 * Tries the providers in order, from where the last driver stopped (`routing_passed`,
 * `routing_unresolved`); records the outcome. A payout's reserve is posted before any
 * provider is asked (`reserveBeforeRouting`), and its refusal releases it
 * (`recordRefusal`, as a payin's refusal releases a pool slot it may hold).
 *
 * A provider's `unknown` answer (timeout, reset, 5xx, unreadable) is never taken for a
 * decline. For a payout the provider is asked its status, with backoff, until it answers
 * definitely: pending or a completion makes the payout that provider's; never received,
 * rejected or withdrawn lets the cascade go on. "Never received" (`not_found`) is believed
 * only once the quiet period since the create was sent has passed (`quietPeriodMs`): a
 * slow provider may still record it. Still unknown at the end of the budget,
 * the row stays `routing` with the provider in `routing_unresolved`, and the create
 * answers 503 (`unresolved`): a retry or the reconciler resolves it later, never asking
 * the next provider first. A payin may go on after its provider's share of the budget:
 * its withdrawal at that provider is recorded with the pass-over, in one transaction, and
 * asked at once (`recordPassedOver`, `WithdrawalDriver.askNow`), so a process that dies
 * in between still withdraws it.
 */
async function route(
  deps: CreateDeps,
  claimed: OperationRow,
  providers: (ProviderConfig | undefined)[],
  names: string[],
  deadline: number,
  signal: AbortSignal,
  /**
   * The create that has just claimed the row: no earlier attempt (a dead driver, a refused
   * create, a link) can have asked the pool under another route.
   */
  firstAttempt = false,
): Promise<OperationRow> {
  let row = claimed;
  let accepted: Accepted | undefined;
  // A payout's reserve is on the balance before any provider can pay it out.
  if (row.type === "payout") await reserveBeforeRouting(deps, row, signal);
  if (row.routing_unresolved !== null) {
    const name = row.routing_unresolved;
    const provider = providers[names.indexOf(name)] ?? (await deps.store.provider(name));
    const connector = provider && deps.connectorFor(provider.kind);
    if (!provider || !connector) throw unresolved();
    // Taken over (see `drive`): the last create was sent before the previous driver's
    // deadline, and the database's clock is past that deadline plus the grace, so that
    // much of the quiet period has passed already.
    const quietUntil = Date.now() + Math.max(0, quietPeriodMs(deps) - ROUTING_GRACE_MS);
    const resolution = await resolveUnknown(deps, connector, provider, row.id, deadline, quietUntil, signal);
    if (resolution.outcome === "unresolved") throw unresolved();
    if (resolution.outcome === "taken") accepted = takenBy(provider, resolution.result);
    else row = await passOver(deps, row, name, resolution.reason);
  }
  for (const [i, provider] of providers.entries()) {
    if (accepted) break;
    const remaining = deadline - Date.now();
    if (remaining <= 0 || signal.aborted) break;
    if (!provider) {
      // Unknown names take no payment.
      deps.logger.warn({ operationId: row.id, provider: names[i] }, "provider not available for routing");
      continue;
    }
    if (row.routing_passed.includes(provider.name)) continue;
    const connector = deps.connectorFor(provider.kind);
    if (!connector || !provider.methods.includes(row.method ?? "")) continue;
    const sentAt = Date.now();
    const answer = await connector.create(
      provider,
      {
        operationId: row.id,
        shopId: row.shop_id,
        direction: row.type === "payment" ? "payin" : "payout",
        method: row.method ?? "",
        amount: row.expected_amount ?? "",
        currency: row.currency ?? "",
        number: row.number ?? undefined,
        name: row.name ?? undefined,
        bankname: row.bankname ?? undefined,
        callbackUrl: `${deps.callbackBaseUrl}/callbacks/providers/${encodeURIComponent(provider.name)}`,
        generation: BigInt(row.version),
      },
      AbortSignal.any([signal, AbortSignal.timeout(Math.min(remaining, deps.attemptTimeoutMs))]),
    );
    if (answer.outcome === "accepted") {
      accepted = { provider, answer };
      break;
    }
    if (answer.outcome === "declined") {
      row = await passOver(deps, row, provider.name, `declined: ${answer.reason}`);
      continue;
    }
    if (row.type === "payment") {
      // A payin may move on (nothing is paid out by our choosing another provider), but
      // the requisites the provider may have issued must stop taking money.
      deps.logger.warn(
        { operationId: row.id, provider: provider.name, reason: answer.reason },
        "provider did not answer a payin; withdrawing it there and moving on",
      );
      row = await passOver(deps, row, provider.name, `unknown, withdrawing: ${answer.reason}`, true);
      await deps.withdrawals?.askNow(row.id, provider.name);
      continue;
    }
    // A payout is never offered to the next provider while this one may have taken it.
    deps.logger.warn(
      { operationId: row.id, provider: provider.name, reason: answer.reason },
      "provider did not answer a payout; asking its status before anyone else",
    );
    row = await persist(
      deps,
      row,
      { routing_unresolved: provider.name },
      { kind: "provider_unknown", provider: provider.name },
    );
    const quietUntil = sentAt + quietPeriodMs(deps);
    const resolution = await resolveUnknown(deps, connector, provider, row.id, deadline, quietUntil, signal);
    if (resolution.outcome === "unresolved") throw unresolved();
    if (resolution.outcome === "taken") accepted = takenBy(provider, resolution.result);
    else row = await passOver(deps, row, provider.name, resolution.reason);
  }
  const recorded = await record(
    deps,
    row,
    accepted && { ...accepted, poolOnRoute: firstAttempt ? names.includes(SELF_MATCHING) : undefined },
  );
  if (accepted && recorded.provider === accepted.provider.name)
    await deps.connectorFor(accepted.provider.kind)?.recorded?.(accepted.provider, recorded);
  if (accepted?.result && recorded.provider === accepted.provider.name) {
    const result = accepted.result;
    const provider = accepted.provider.name;
    await deps.store.transaction((tx) => applyProviderResult(deps, tx, provider, result, "reconciler"));
    return (await deps.store.findAnyById(recorded.id)) ?? recorded;
  }
  return recorded;
}

/** A payout a provider was found holding by the status question: accepted by it. */
const takenBy = (provider: ProviderConfig, result: ProviderResult | undefined): Accepted => ({
  provider,
  answer: { outcome: "accepted", receiptRequired: false },
  result,
});

/**
 * Records that `name` gave a definite "no", so no later driver asks it again; with
 * `withdraw` (a payin whose answer there was unknown), its withdrawal there too.
 */
function passOver(deps: CreateDeps, row: OperationRow, name: string, reason: string, withdraw = false) {
  deps.logger.info({ operationId: row.id, provider: name, reason }, "provider passed over");
  return persist(
    deps,
    row,
    {
      routing_passed: [...new Set([...row.routing_passed, name])],
      routing_unresolved: row.routing_unresolved === name ? null : row.routing_unresolved,
    },
    { kind: "provider_declined", provider: name },
    withdraw ? name : undefined,
  );
}

/**
 * Writes the cascade position (no event: it is no state of the operation) with the
 * version check, and with it, in one transaction, the withdrawal at `withdrawAt`. A
 * concurrent change of the row (a cancel request) is re-read and the position written
 * again; a row another driver took over (another deadline) or that is no longer routing
 * ends this driver's work with a 503 (`unresolved`).
 */
async function persist(
  deps: CreateDeps,
  row: OperationRow,
  patch: Pick<OperationPatch, "routing_passed" | "routing_unresolved">,
  fact: Extract<Fact, { kind: "provider_declined" | "provider_unknown" }>,
  withdrawAt?: string,
): Promise<OperationRow> {
  let current = row;
  for (let attempt = 0; attempt < 10; attempt++) {
    const { row: next } = withdrawAt
      ? await deps.store.transaction(async (tx) => {
          const moved = await deps.store.applyFact(current, fact, { data: patch, tx });
          if (moved.row)
            await recordPassedOver(tx, row.id, withdrawAt, withdrawalLeaseMs(deps.attemptTimeoutMs));
          return moved;
        })
      : await deps.store.applyFact(current, fact, { data: patch });
    if (next) return next;
    const now = await deps.store.findAnyById(row.id);
    if (now?.status !== "routing" || !sameDeadline(now, row)) throw unresolved();
    current = now;
  }
  throw unresolved();
}

/** Whether `a` is still under the routing of the driver that holds `b` (a take-over moves the deadline). */
const sameDeadline = (a: OperationRow, b: OperationRow) =>
  a.routing_deadline?.getTime() === b.routing_deadline?.getTime();

/**
 * Writes the routing outcome, honouring a cancel that arrived meanwhile. Like `persist`,
 * it stops with a 503 (`unresolved`) once another driver has taken the row over (another
 * `routing_deadline`): the outcome is that driver's to record. With `withdrawAt`, a
 * cancellation is committed only together with the withdrawal at that provider.
 */
async function record(
  deps: CreateDeps,
  claimed: OperationRow,
  accepted: Accepted | undefined,
  withdrawAt?: string,
): Promise<OperationRow> {
  let current = claimed;
  for (let attempt = 0; attempt < 10; attempt++) {
    let next: OperationRow | undefined;
    if (current.status !== "routing") return current;
    if (!accepted) {
      // Nobody accepted: refused, or cancelled when a cancel arrived meanwhile. What the
      // routing may hold (a payout's reserve, a payin's pool slot) is released by the
      // refusal's internal event, queued with it; a payout's reserve at once as well.
      next = await recordRefusal(
        deps.store,
        current,
        { routing_deadline: null },
        withdrawAt
          ? (tx) => recordPassedOver(tx, claimed.id, withdrawAt, withdrawalLeaseMs(deps.attemptTimeoutMs))
          : undefined,
      );
      if (next && !current.cancel_requested) {
        // Released before the refusal is answered, as it was reserved before any provider
        // was asked; the event queued with the refusal stays the fallback.
        if (next.type === "payout" && next.status === "rejected") await releaseRefusedReserve(deps, next);
        throw notAccepted();
      }
    } else {
      const { provider, answer } = accepted;
      // Accepted: pending or awaiting confirmation, or cancelled when a cancel arrived
      // meanwhile (the cancel won: no requisites are ever stored, so none can be shown).
      const data: DataPatch = { routing_deadline: null };
      let statements: EventStatements = {};
      if (!current.cancel_requested) {
        data.expires_at = answer.expiresAt ?? null;
        if (current.type === "payment" && answer.requisites) {
          data.number = answer.requisites.number;
          data.name = answer.requisites.name ?? null;
          data.bankname = answer.requisites.bankname ?? null;
        }
        // Only a payin the pool was asked for (`Admit`, by this driver, an earlier one or
        // an earlier attempt, under a route with the pool) can have a slot there; its
        // event says whether that can be, so the pool's consumer skips the ones that
        // cannot (`poolPayinsSkip`) instead of opening a transaction for nothing. Only a
        // first attempt knows every route it had: any other may have been admitted
        // under a route since changed.
        if (current.type === "payment")
          statements = {
            poolMayHoldSlot:
              accepted.poolOnRoute !== false ||
              provider.name === SELF_MATCHING ||
              current.routing_passed.includes(SELF_MATCHING),
          };
      }
      ({ row: next } = await deps.store.applyFact(
        current,
        { kind: "provider_accepted", provider: provider.name, receiptRequired: answer.receiptRequired },
        { data, statements },
      ));
    }
    if (next) return next;
    current = (await deps.store.findAnyById(claimed.id)) ?? current;
    if (current.status === "routing" && !sameDeadline(current, claimed)) throw unresolved();
  }
  throw new DependencyUnavailableError("operation kept changing; retry");
}

export const conflict = () =>
  new IdempotencyConflictError(
    "merchant_operation_id was already used with a different request",
    "merchant_operation_id",
  );

const routeNotConfigured = (direction: string, method: string) =>
  new RouteNotConfiguredError(direction, method);

/**
 * No decision yet: a provider's answer is still unknown (or another driver took the
 * routing over). The spec's 503, "retry or read": the operation goes on being resolved.
 */
const unresolved = () =>
  new DependencyUnavailableError(
    "the provider's answer is not known yet; retry the same request or read the state later",
  );

const notAccepted = () => new NoProviderAcceptedError();

/**
 * A quote's failure, translated at this port: a refusal (no tier covers the amount, no FX
 * rate: `PricingRefusedError` priced from cached terms, or the ledger's own refusal with a
 * public code) is the merchant's answer, a 4xx, and passes through; only a failure to get
 * an answer from the ledger means "retry later".
 */
function passThrough(err: unknown): Error {
  if (err instanceof PricingRefusedError) return err;
  return ledgerRefusal(err) ?? new DependencyUnavailableError("ledger unavailable");
}

export { TERMINAL };
