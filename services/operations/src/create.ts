import { createHash } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { isMethod, METHODS, parseRequestAmount } from "@gw/money";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, ConnectError, errorInfo, failure } from "@gw/rpc";
import { stringify } from "safe-stable-stringify";
import { v5 as uuidv5 } from "uuid";
import { BANKS_BY_CURRENCY } from "./banks.ts";
import type { Connector, ProviderAnswer, ProviderConfig } from "./connectors/connector.ts";
import { type OperationRow, TERMINAL } from "./model.ts";
import { afterRecord, POOL_PROVIDER, type PoolDeps, poolAnswer, SELF_MATCHING } from "./pool.ts";
import type { OperationStore } from "./store.ts";

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

const invalid = (field: string, message: string) =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

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
  logger: Logger;
  /** The self-matching pool, for routes that name `self_matching` (absent: that entry is skipped). */
  pool?: PoolDeps;
}

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
): Promise<CreateResult> {
  const deadline = Date.now() + deps.budgetMs;
  const hash = requestHash(input);
  const direction = input.type === "payment" ? "payin" : "payout";
  // Both reads at once, on two pooled connections: one round trip of latency instead of
  // two. A replay wastes the route read, which is cheap.
  const [existing, routing] = await Promise.all([
    deps.store.findByMop(input.shopId, input.mop),
    deps.store.routeWithProviders(input.shopId, input.method, direction),
  ]);
  if (existing) return resume(deps, input, hash, existing, deadline, signal);
  if (!routing || routing.names.length === 0) throw routeNotConfigured(direction, input.method);
  const quote = await quoteFor(deps, input, routing.route.settlementCurrency, deadline, signal);

  const claimed = await deps.store.insert({
    id: operationIdFor(input.shopId, input.mop),
    shop_id: input.shopId,
    merchant_id: input.merchantId,
    merchant_operation_id: input.mop,
    request_hash: hash,
    type: input.type,
    status: "routing",
    method: input.method,
    currency: input.currency,
    expected_amount: input.amount,
    client_id: input.clientId,
    client_ip: input.clientIp ?? null,
    number: input.type === "payout" ? (input.number ?? null) : null,
    name: input.type === "payout" ? (input.name ?? null) : null,
    bankname: input.type === "payout" ? (input.bankname ?? null) : null,
    ...quote,
    routing_deadline: new Date(deadline),
  });
  if (!claimed) {
    // A concurrent request (or a cancel) claimed the key between our read and insert.
    const winner = await deps.store.findByMop(input.shopId, input.mop);
    if (!winner) throw failure(Code.Unavailable, "dependency_unavailable", "create raced; retry");
    return resume(deps, input, hash, winner, deadline, signal);
  }
  return {
    row: await route(deps, claimed, routing.providers, routing.names, deadline, signal),
    replayed: false,
  };
}

/** The commission and FX figures of a create, as the row stores them. */
async function quoteFor(
  deps: CreateDeps,
  input: CreateInput,
  settlementCurrency: string,
  deadline: number,
  signal: AbortSignal,
) {
  const quote = await deps.ledger
    .quote(
      {
        shopId: input.shopId,
        method: input.method,
        direction: input.type === "payment" ? "payin" : "payout",
        amount: input.amount,
        currency: input.currency,
        settlementCurrency,
      },
      { signal, timeoutMs: Math.max(1, deadline - Date.now()) },
    )
    .catch((err: unknown) => {
      throw passThrough(err);
    });
  return {
    settlement_currency: quote.settlementCurrency,
    fx_rate: quote.fxRate ?? null,
    fx_source: quote.fxSource ?? null,
    commission_percent: quote.tier?.percent ?? "0",
    commission_fixed: quote.tier?.fixed ?? "0",
  };
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
    const adopted = await deps.store.transition(
      row,
      {
        request_hash: hash,
        method: input.method,
        currency: input.currency,
        expected_amount: input.amount,
        client_id: input.clientId,
        client_ip: input.clientIp ?? null,
      },
      { emit: true },
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
      const routingDeadline = current.routing_deadline?.getTime() ?? 0;
      // The deadline was set by another replica's clock: a grace of 5 s (as the reconciler
      // keeps) absorbs skew and a slow final write before a second driver takes over.
      if (Date.now() > routingDeadline + 5000) {
        // The request that claimed the key died mid-routing: drive it again. Providers are
        // idempotent on our operation id, so one that had accepted answers the same again.
        return { row: await reroute(deps, current, deadline, signal), replayed: false };
      }
      if (Date.now() > deadline || signal.aborted)
        throw failure(
          Code.Unavailable,
          "dependency_unavailable",
          "the original create is still in progress; retry",
        );
      waited = true;
      await new Promise((r) => setTimeout(r, 25));
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
 * create in progress). Undefined when the row changed first. A cancel accepted after the
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
    status: "routing",
    routing_deadline: new Date(deadline),
  });
  if (!taken) return undefined;
  return route(deps, taken, routing.providers, routing.names, deadline, signal);
}

/**
 * Drives a `routing` row whose create died (its deadline passed) to its outcome, as the
 * first create would have: claims it by moving the deadline (so one driver wins), then
 * routes, unless a cancel was accepted meanwhile: then it records `cancelled` without
 * asking any provider. Used by a retried create and by the reconciler. Throws `no_provider_accepted`
 * after recording `rejected` when nobody accepted.
 */
export async function reroute(deps: CreateDeps, row: OperationRow, deadline: number, signal: AbortSignal) {
  const direction = row.type === "payment" ? "payin" : "payout";
  const routing = await deps.store.routeWithProviders(row.shop_id, row.method ?? "", direction);
  const taken = await deps.store.transition(row, { routing_deadline: new Date(deadline) }, { emit: false });
  if (!taken) {
    const now = await deps.store.findAnyById(row.id);
    if (!now) throw failure(Code.Unavailable, "dependency_unavailable", "retry");
    return now;
  }
  if (taken.cancel_requested) {
    // A cancel was accepted while the create was dead: it wins, and no provider is asked
    // (one asked now could accept a payment nobody will pay or see). A slot the dead
    // create may have reserved in the pool is freed.
    const cancelled = await record(deps, taken, undefined);
    if (deps.pool && routing?.names.includes(SELF_MATCHING)) await afterRecord(deps.pool, cancelled);
    return cancelled;
  }
  return route(deps, taken, routing?.providers ?? [], routing?.names ?? [], deadline, signal);
}

/** Tries the providers in order; records the outcome. */
async function route(
  deps: CreateDeps,
  claimed: OperationRow,
  providers: (ProviderConfig | undefined)[],
  names: string[],
  deadline: number,
  signal: AbortSignal,
): Promise<OperationRow> {
  let accepted:
    | { provider: ProviderConfig; answer: Extract<ProviderAnswer, { outcome: "accepted" }> }
    | undefined;
  for (const [i, provider] of providers.entries()) {
    const remaining = deadline - Date.now();
    if (remaining <= 0 || signal.aborted) break;
    if (!provider && names[i] === SELF_MATCHING && deps.pool) {
      // The pool answers like a provider: admitted (or, for a payout, taken) or declined.
      try {
        const answer = await poolAnswer(
          deps.pool,
          claimed,
          AbortSignal.any([signal, AbortSignal.timeout(remaining)]),
        );
        if (answer.outcome === "accepted") {
          accepted = { provider: POOL_PROVIDER, answer };
          break;
        }
        deps.logger.info(
          { operationId: claimed.id, provider: SELF_MATCHING, reason: answer.reason },
          "provider declined",
        );
      } catch (err) {
        deps.logger.warn(
          { operationId: claimed.id, provider: SELF_MATCHING, err: String(err) },
          "provider did not answer",
        );
      }
      continue;
    }
    if (!provider) {
      // Unknown names (and `self_matching` without the pool wired) take no payment.
      deps.logger.warn({ operationId: claimed.id, provider: names[i] }, "provider not available for routing");
      continue;
    }
    const connector = deps.connectorFor(provider.kind);
    if (!connector || !provider.methods.includes(claimed.method ?? "")) continue;
    try {
      const answer = await connector.create(
        provider,
        {
          operationId: claimed.id,
          direction: claimed.type === "payment" ? "payin" : "payout",
          method: claimed.method ?? "",
          amount: claimed.expected_amount ?? "",
          currency: claimed.currency ?? "",
          number: claimed.number ?? undefined,
          name: claimed.name ?? undefined,
          bankname: claimed.bankname ?? undefined,
          callbackUrl: `${deps.callbackBaseUrl}/callbacks/providers/${encodeURIComponent(provider.name)}`,
        },
        AbortSignal.any([signal, AbortSignal.timeout(Math.min(remaining, deps.attemptTimeoutMs))]),
      );
      if (answer.outcome === "accepted") {
        accepted = { provider, answer };
        break;
      }
      deps.logger.info(
        { operationId: claimed.id, provider: provider.name, outcome: answer.outcome, reason: answer.reason },
        answer.outcome === "declined" ? "provider declined" : "provider did not answer",
      );
    } catch (err) {
      deps.logger.warn(
        { operationId: claimed.id, provider: provider.name, err: String(err) },
        "provider did not answer",
      );
    }
  }
  const row = await record(deps, claimed, accepted);
  if (accepted?.provider === POOL_PROVIDER && deps.pool) await afterRecord(deps.pool, row);
  return row;
}

/** Writes the routing outcome, honouring a cancel that arrived meanwhile. */
async function record(
  deps: CreateDeps,
  claimed: OperationRow,
  accepted:
    | { provider: ProviderConfig; answer: Extract<ProviderAnswer, { outcome: "accepted" }> }
    | undefined,
): Promise<OperationRow> {
  let current = claimed;
  for (let attempt = 0; attempt < 10; attempt++) {
    let next: OperationRow | undefined;
    if (current.status !== "routing") return current;
    if (current.cancel_requested) {
      // The cancel won: no requisites are ever stored, so none can be shown.
      next = await deps.store.transition(
        current,
        {
          status: "cancelled",
          cancelled_by_command: true,
          provider: accepted?.provider.name ?? null,
          routing_deadline: null,
        },
        { emit: true },
      );
    } else if (!accepted) {
      next = await deps.store.transition(
        current,
        { status: "rejected", routing_deadline: null },
        { emit: false },
      );
      if (next) throw notAccepted();
    } else {
      const { provider, answer } = accepted;
      const patch: Parameters<OperationStore["transition"]>[1] = {
        provider: provider.name,
        receipt_required: answer.receiptRequired,
        expires_at: answer.expiresAt ?? null,
        routing_deadline: null,
        status: current.type === "payment" && answer.receiptRequired ? "awaiting_confirmation" : "pending",
      };
      if (current.type === "payment" && answer.requisites) {
        patch.number = answer.requisites.number;
        patch.name = answer.requisites.name ?? null;
        patch.bankname = answer.requisites.bankname ?? null;
      }
      next = await deps.store.transition(current, patch, { emit: true });
    }
    if (next) return next;
    current = (await deps.store.findAnyById(claimed.id)) ?? current;
  }
  throw failure(Code.Unavailable, "dependency_unavailable", "operation kept changing; retry");
}

const conflict = () =>
  failure(
    Code.FailedPrecondition,
    "idempotency_conflict",
    "merchant_operation_id was already used with a different request",
    "merchant_operation_id",
  );

const routeNotConfigured = (direction: string, method: string) =>
  failure(Code.FailedPrecondition, "route_not_configured", `no ${direction} route for method ${method}`);

const notAccepted = () =>
  failure(Code.Unavailable, "no_provider_accepted", "no provider accepted the operation");

/** Keeps a dependency's public error (pricing missing, for example); anything else is 503. */
function passThrough(err: unknown): ConnectError {
  const info = errorInfo(err);
  const e = ConnectError.from(err);
  if (info && (e.code === Code.FailedPrecondition || e.code === Code.InvalidArgument)) return e;
  return failure(Code.Unavailable, "dependency_unavailable", "ledger unavailable");
}

export { TERMINAL };
