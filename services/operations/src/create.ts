import { createHash } from "node:crypto";
import { createProblem } from "@gw/api";
import { type Decimal, METHODS, type Method, parseRequestAmount } from "@gw/money";
import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { stringify } from "safe-stable-stringify";
import { v5 as uuidv5 } from "uuid";
import { BANKS_BY_CURRENCY } from "./banks.ts";
import type { ProviderConfig } from "./connectors/connector.ts";
import type { CreateDeps } from "./create-deps.ts";
import { ledgerRefusal } from "./dependency-errors.ts";
import {
  DependencyUnavailableError,
  IdempotencyConflictError,
  PricingRefusedError,
  RouteNotConfiguredError,
  ValidationError,
} from "./lifecycle/errors.ts";
import { type OperationRow, TERMINAL } from "./model.ts";
import { Pricing, type Quoted, type QuoteInput } from "./pricing.ts";
import type { ClaimRow, OperationStoreCore } from "./repository/operations.ts";
import { notAccepted, record, route, unresolved } from "./routing.ts";

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

/**
 * Validates a create request by the merchant API's rules (libs/api create.ts, which the edge
 * calls too, so both answer a bad request with the same message); this keeps the service
 * safe on its own. Only the bank dictionary is operations' own.
 */
export function parseCreate(req: CreateOperationRequest): CreateInput {
  const shopId = req.scope?.shopId ?? "";
  const merchantId = req.scope?.merchantId ?? "";
  if (!shopId || !merchantId) throw invalid("scope", "scope is required");
  if (req.type !== "payment" && req.type !== "payout")
    throw invalid("type", "type must be payment or payout");
  const problem = createProblem(req.type, {
    merchant_operation_id: req.merchantOperationId,
    client_id: req.clientId,
    client_ip: req.clientIp || undefined,
    method: req.method,
    amount: req.amount,
    currency: req.currency,
    number: req.number,
    name: req.name,
    bankname: req.bankname,
  });
  if (problem) throw invalid(problem.field, problem.message);
  // createProblem has checked the method, the amount and the payout's number and bank.
  const amount = parseRequestAmount(req.amount) as Decimal;
  const rail = METHODS[req.method as Method].rail;
  let number: string | undefined;
  let name: string | undefined;
  let bankname: string | undefined;
  if (req.type === "payout") {
    number = req.number?.trim();
    name = req.name?.trim() || "аноним";
    if (rail === "phone") {
      bankname = req.bankname?.trim();
      if (!bankname || !BANKS_BY_CURRENCY[req.currency]?.[bankname])
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

export type { CreateDeps } from "./create-deps.ts";

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

export const conflict = () =>
  new IdempotencyConflictError(
    "merchant_operation_id was already used with a different request",
    "merchant_operation_id",
  );

const routeNotConfigured = (direction: string, method: string) =>
  new RouteNotConfiguredError(direction, method);

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
