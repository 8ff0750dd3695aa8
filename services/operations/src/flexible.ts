import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { type Decimal, isMethod, METHODS, parseRequestAmount } from "@gw/money";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import type {
  ConfirmFlexibleAmountRequest,
  CreateFlexibleLinkRequest,
  FlexibleLinkResponseSchema,
  GetFlexibleLinkRequest,
  GetPoolCoverageRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { stringify } from "safe-stable-stringify";
import {
  type CreateDeps,
  type CreateInput,
  conflict,
  createOperation,
  operationIdFor,
  pricingOf,
} from "./create.ts";
import { matchingRefusal } from "./dependency-errors.ts";
import { checkField } from "./field-rules.ts";
import {
  DependencyUnavailableError,
  FlexibleLinkNotFoundError,
  FlexibleRouteNotPoolError,
  NoProviderAcceptedError,
  RouteNotConfiguredError,
  ValidationError,
} from "./lifecycle/errors.ts";
import { type OperationRow, toOperation } from "./model.ts";
import { SELF_MATCHING } from "./pool.ts";
import type { LinkRow } from "./repository/links.ts";
import type { OperationStore } from "./repository/operations.ts";

/**
 * Flexible payment links (`POST /v1/payment/link/flexible`) and the pool coverage the
 * availability endpoints report. See docs/architecture.md, "Flexible links".
 *
 * A link lives in `operations.flexible_links` under the operation id derived from (shop,
 * merchant_operation_id), the id its payment gets. Its page credential `k` is
 * HMAC-SHA256(FLEXIBLE_LINK_SECRET, id) in base64url (256 bits): a retry computes the same
 * `k` and answers the same URL, while only sha256(k) is stored and a presented `k` is
 * compared with it in constant time. `k` is never logged.
 */

export interface FlexibleDeps extends CreateDeps {
  store: OperationStore;
  matching: Client<typeof MatchingService>;
  linkLifetimeMs: number;
  /** The HMAC key of `k`. */
  linkSecret: Buffer;
}

type Answer = MessageInitShape<typeof FlexibleLinkResponseSchema>;

/** The widest bounds a request amount can have: what an absent bound means. */
const LOWEST = "0.01";
const HIGHEST = "9999999999999999.99";
const READ_TIMEOUT_MS = 2_500;

const invalid = (field: string, message: string) => new ValidationError(message, field);

/** A new random HMAC key, for a process started without FLEXIBLE_LINK_SECRET. */
export const ephemeralLinkSecret = () => randomBytes(32);

export function linkCredential(secret: Buffer, operationId: string): string {
  return createHmac("sha256", secret).update(`flexible-link\n${operationId}`).digest("base64url");
}

const sha256 = (text: string) => createHash("sha256").update(text).digest();

/** Constant-time check of a presented `k` against the stored hash (both hashed to 32 bytes first). */
export function credentialMatches(k: string, kHashHex: string): boolean {
  const stored = Buffer.from(kHashHex, "hex");
  const given = sha256(k);
  return stored.length === given.length && timingSafeEqual(stored, given);
}

function amountOf(text: string | undefined, field: string): Decimal {
  const parsed = text === undefined ? undefined : parseRequestAmount(text);
  if (!parsed?.gt(0))
    throw invalid(field, `${field} must be a decimal string with two decimal places, greater than 0`);
  return parsed;
}

/** The coverage of a payin route by the pool: `full` only the pool, `partial` the pool and others, `none` no pool. */
export function coverageOf(payin: string[]): "full" | "partial" | "none" {
  if (!payin.includes(SELF_MATCHING)) return "none";
  return payin.every((n) => n === SELF_MATCHING) ? "full" : "partial";
}

/**
 * The availability endpoints' precondition and coverage: the shop must have a payin
 * route for the method (`route_not_configured`) and payin pricing at both ends of the
 * range (`pricing_not_configured`, from the ledger's quote).
 */
export async function getPoolCoverage(d: CreateDeps, req: GetPoolCoverageRequest) {
  const shopId = req.scope?.shopId ?? "";
  if (!shopId) throw invalid("scope", "scope is required");
  if (!isMethod(req.method)) throw invalid("method", "method is not supported");
  if (METHODS[req.method].currency !== req.currency)
    throw invalid("currency", "method does not belong to currency");
  const lo = amountOf(req.minAmount, "min_amount");
  const hi = amountOf(req.maxAmount, "max_amount");
  if (lo.gt(hi)) throw invalid("min_amount", "min_amount must not exceed max_amount");
  const routing = await d.store.routeWithProviders(shopId, req.method, "payin");
  if (!routing || routing.names.length === 0) throw new RouteNotConfiguredError("payin", req.method);
  await Promise.all(
    [lo, hi].map((amount) =>
      pricingOf(d).quote(
        {
          shopId,
          method: req.method,
          direction: "payin",
          amount: amount.toFixed(2),
          currency: req.currency,
          settlementCurrency: routing.route.settlementCurrency,
        },
        { timeoutMs: READ_TIMEOUT_MS },
      ),
    ),
  );
  return { coverage: coverageOf(routing.names) };
}

interface FlexibleInput {
  shopId: string;
  merchantId: string;
  mop: string;
  clientId: string;
  clientIp: string | undefined;
  method: string;
  currency: string;
  recommended: string;
  min: string | undefined;
  max: string | undefined;
}

/** Rules 1 to 3 of the spec, and the usual create fields. */
function parseFlexible(req: CreateFlexibleLinkRequest): FlexibleInput {
  const shopId = req.scope?.shopId ?? "";
  const merchantId = req.scope?.merchantId ?? "";
  if (!shopId || !merchantId) throw invalid("scope", "scope is required");
  if (!req.merchantOperationId) throw invalid("merchant_operation_id", "merchant_operation_id is required");
  if (!req.clientId) throw invalid("client_id", "client_id is required");
  checkField("merchant_operation_id", req.merchantOperationId);
  checkField("client_id", req.clientId);
  if (!isMethod(req.method)) throw invalid("method", "method is not supported");
  if (METHODS[req.method].currency !== req.currency)
    throw invalid("currency", "method does not belong to currency");
  const recommended = amountOf(req.recommendedAmount, "recommended_amount");
  const min = req.minAmount === undefined ? undefined : amountOf(req.minAmount, "min_amount");
  const max = req.maxAmount === undefined ? undefined : amountOf(req.maxAmount, "max_amount");
  if (min && max && min.gt(max)) throw invalid("min_amount", "min_amount must not exceed max_amount");
  if ((min && recommended.lt(min)) || (max && recommended.gt(max)))
    throw invalid("recommended_amount", "recommended_amount must lie within min_amount and max_amount");
  return {
    shopId,
    merchantId,
    mop: req.merchantOperationId,
    clientId: req.clientId,
    clientIp: req.clientIp || undefined,
    method: req.method,
    currency: req.currency,
    recommended: recommended.toFixed(2),
    min: min?.toFixed(2),
    max: max?.toFixed(2),
  };
}

const createInput = (link: FlexibleInput, amount: string): CreateInput => ({
  type: "payment",
  shopId: link.shopId,
  merchantId: link.merchantId,
  mop: link.mop,
  clientId: link.clientId,
  clientIp: link.clientIp,
  method: link.method,
  amount,
  currency: link.currency,
  number: undefined,
  name: undefined,
  bankname: undefined,
});

const inputOf = (row: LinkRow): FlexibleInput => ({
  shopId: row.shop_id,
  merchantId: row.merchant_id,
  mop: row.merchant_operation_id,
  clientId: row.client_id,
  clientIp: row.client_ip ?? undefined,
  method: row.method,
  currency: row.currency,
  recommended: row.recommended_amount,
  min: row.min_amount ?? undefined,
  max: row.max_amount ?? undefined,
});

function linkMessage(row: LinkRow) {
  const expired = row.status === "amount_selection" && row.expires_at.getTime() <= Date.now();
  return {
    operationId: row.operation_id,
    status: expired ? "expired" : row.status,
    method: row.method,
    currency: row.currency,
    recommendedAmount: row.recommended_amount,
    minAmount: row.min_amount ?? undefined,
    maxAmount: row.max_amount ?? undefined,
    expiresAt: row.expires_at.toISOString(),
    picker: row.picker,
  };
}

/** Amounts that can be admitted now within the link's bounds (advisory; a busy pool is UNAVAILABLE). */
async function intervalsFor(
  d: FlexibleDeps,
  link: FlexibleInput,
): Promise<{ minAmount: string; maxAmount: string }[]> {
  const res = await d.matching.availability(
    {
      method: link.method,
      currency: link.currency,
      minAmount: link.min ?? LOWEST,
      maxAmount: link.max ?? HIGHEST,
      coverage: "full",
    },
    { timeoutMs: READ_TIMEOUT_MS },
  );
  return res.intervals.map((i) => ({ minAmount: i.minAmount, maxAmount: i.maxAmount }));
}

/**
 * Reserves `amount` for the link's payment id; true when admitted. A slot the id already
 * holds (an earlier attempt that died before creating the payment) is kept, whatever its
 * amount: `createOperation` then creates the payment at that slot's amount.
 */
async function admit(
  d: FlexibleDeps,
  link: FlexibleInput,
  id: string,
  amount: string,
): Promise<string | undefined> {
  try {
    const { slot } = await d.matching.admit(
      {
        payinId: id,
        shopId: link.shopId,
        method: link.method,
        currency: link.currency,
        amount,
        slotLifetimeMs: BigInt(d.pool?.slotLifetimeMs ?? 30 * 60_000),
      },
      { timeoutMs: READ_TIMEOUT_MS },
    );
    return slot?.status === "reserved" ? slot.amount : undefined;
  } catch (err) {
    if (matchingRefusal(err) === "amount_unavailable") return undefined;
    throw err;
  }
}

function findLink(d: FlexibleDeps, id: string): Promise<LinkRow | undefined> {
  return d.store.links.find(id);
}

/** The stored answer of a link: what a retry of the create, or the page, sees. */
async function answerOf(
  d: FlexibleDeps,
  row: LinkRow,
  k: string | undefined,
  replayed: boolean,
): Promise<Answer> {
  const op = row.status === "amount_selection" ? undefined : await d.store.findAnyById(row.operation_id);
  return {
    link: linkMessage(row),
    operation: op && op.status !== "routing" ? toOperation(op) : undefined,
    k,
    replayed,
  };
}

/** `POST /v1/payment/link/flexible`. */
export async function createFlexibleLink(
  d: FlexibleDeps,
  req: CreateFlexibleLinkRequest,
  signal: AbortSignal,
) {
  const input = parseFlexible(req);
  const routing = await d.store.routeWithProviders(input.shopId, input.method, "payin");
  if (!routing || routing.names.length === 0) throw new RouteNotConfiguredError("payin", input.method);
  if (coverageOf(routing.names) !== "full") throw new FlexibleRouteNotPoolError();
  if (!req.optIn) {
    // Rule 4: no picker, an ordinary payment for the recommended amount.
    const { row, replayed } = await createOperation(d, createInput(input, input.recommended), signal, {
      forLink: true,
    });
    return {
      link: {
        operationId: row.id,
        status: "ordinary",
        method: input.method,
        currency: input.currency,
        recommendedAmount: input.recommended,
        picker: req.picker,
      },
      operation: toOperation(row),
      replayed,
    } satisfies Answer;
  }

  const id = operationIdFor(input.shopId, input.mop);
  const { shopId: _s, merchantId: _m, ...body } = input;
  const hash = createHash("sha256")
    .update(stringify({ flexible: true, ...body }) ?? "")
    .digest("hex");
  const k = linkCredential(d.linkSecret, id);
  const replay = async (row: LinkRow) => {
    if (row.request_hash !== hash) throw conflict();
    return answerOf(d, row, k, true);
  };

  const existing = await findLink(d, id);
  if (existing && existing.status !== "deciding") return replay(existing);
  if (existing && existing.request_hash !== hash) throw conflict();
  if (!existing) {
    // The key belongs to an ordinary create (or a cancel placeholder): not a link.
    if (await d.store.findByMop(input.shopId, input.mop)) throw conflict();
    // The link row is committed first, `deciding`: it holds the key from now on, so an
    // attempt that fails after the pool's Admit leaves a link that a retry with the same
    // body decides again (reusing the slot and any payment of that attempt), never an
    // operation row without its link, which answered idempotency_conflict.
    await d.store.links.insert(
      {
        operation_id: id,
        shop_id: input.shopId,
        merchant_id: input.merchantId,
        merchant_operation_id: input.mop,
        request_hash: hash,
        client_id: input.clientId,
        client_ip: input.clientIp ?? null,
        method: input.method,
        currency: input.currency,
        recommended_amount: input.recommended,
        min_amount: input.min ?? null,
        max_amount: input.max ?? null,
        picker: req.picker || "amount",
        k_hash: sha256(k).toString("hex"),
      },
      d.linkLifetimeMs,
    );
  }

  // The decision is taken under a claim of the link (one committed statement; no lock is
  // held across the calls to matching): a concurrent attempt waits for it and replays
  // it. A failure ends the claim and leaves the link `deciding`; a claim whose process
  // died lapses after `claimMs` and the next attempt decides again.
  const waitUntil = Date.now() + claimMs(d);
  for (;;) {
    const row = await d.store.links.claim(id, "deciding", claimMs(d));
    if (!row) {
      const now = await findLink(d, id);
      if (!now) throw new DependencyUnavailableError("create raced; retry");
      if (now.status !== "deciding") return replay(now);
      if (now.request_hash !== hash) throw conflict();
      await waitForClaim(waitUntil, signal);
      continue;
    }
    const claim = row.claim ?? "";
    try {
      if (row.request_hash !== hash) throw conflict();
      const decided = await decideLink(d, input, row, k, signal);
      if (await d.store.links.decide(id, claim, decided.status)) return decided.answer;
      // The claim lapsed and another attempt decided meanwhile: its decision stands.
      const now = await findLink(d, id);
      if (!now || now.status === "deciding") throw new DependencyUnavailableError("create raced; retry");
      return replay(now);
    } finally {
      await d.store.links.release(id, claim).catch(() => {});
    }
  }
}

/**
 * How long one attempt may hold a link's claim: the create's budget and the matching
 * calls around it, with a margin. Waiting attempts wait as long.
 */
const claimMs = (d: FlexibleDeps) => d.budgetMs + 3 * READ_TIMEOUT_MS + 5_000;

/** Waits a little for another attempt's claim to end; 503 once `until` has passed. */
async function waitForClaim(until: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || Date.now() >= until)
    throw new DependencyUnavailableError("the link is being decided; retry");
  await sleep(CLAIM_POLL_MS, undefined, { signal }).catch(() => {});
}
const CLAIM_POLL_MS = 50;

/** A `deciding` link's decision (its caller holds the claim): created, amount_selection or rejected. */
async function decideLink(
  d: FlexibleDeps,
  input: FlexibleInput,
  row: LinkRow,
  k: string,
  signal: AbortSignal,
): Promise<{ status: LinkRow["status"]; answer: Answer }> {
  const decided = (status: LinkRow["status"]) => linkMessage({ ...row, status });
  // An earlier attempt that got as far as the payment: that payment is the outcome
  // (replayed, still routing, or its error again), at the amount it was created with.
  const earlier = await d.store.findByMop(input.shopId, input.mop);
  const slotAmount = earlier?.expected_amount ?? (await admit(d, input, row.operation_id, input.recommended));
  if (slotAmount !== undefined) {
    const { row: op } = await createOrRelease(d, createInput(input, slotAmount), signal);
    return {
      status: "created",
      answer: { link: decided("created"), operation: toOperation(op), k, replayed: false },
    };
  }
  const intervals = await intervalsFor(d, input);
  if (intervals.length === 0)
    return { status: "rejected", answer: { link: decided("rejected"), k, replayed: false } };
  return {
    status: "amount_selection",
    answer: { link: decided("amount_selection"), k, intervals, replayed: false },
  };
}

/**
 * Creates the payment of a slot the link holds. When the create fails and its payment
 * ended without the pool (recorded `rejected`: nobody accepted), the slot is released at
 * once, since no retry can use it (a retry replays that outcome). When no payment was
 * recorded, the slot stays for the retry, which decides again with the same slot; if no
 * retry comes, the reconciler releases it (`Reconciler`, undecided links without a payment).
 */
async function createOrRelease(d: FlexibleDeps, input: CreateInput, signal: AbortSignal) {
  try {
    return await createOperation(d, input, signal, { forLink: true });
  } catch (err) {
    const op = await d.store.findByMop(input.shopId, input.mop).catch(() => undefined);
    if (op && op.provider !== SELF_MATCHING && ["rejected", "cancelled"].includes(op.status))
      await d.matching
        .releaseSlot(
          { payinId: op.id, reason: op.status as "rejected" | "cancelled", generation: BigInt(op.version) },
          { timeoutMs: READ_TIMEOUT_MS },
        )
        .catch((e: unknown) =>
          d.logger.warn(
            { operationId: op.id, err: String(e) },
            "flexible: slot release failed; the reconciler releases it",
          ),
        );
    throw err;
  }
}

/** The link behind `operation_id` + `k`, or NOT_FOUND (a wrong `k` looks like an unknown id). */
async function authorised(d: FlexibleDeps, operationId: string, k: string): Promise<LinkRow> {
  const row = /^[0-9a-f-]{36}$/i.test(operationId) ? await findLink(d, operationId.toLowerCase()) : undefined;
  // Compare even without a row, so timing does not tell known ids apart.
  const ok = credentialMatches(k, row?.k_hash ?? "00".repeat(32));
  if (!row || !ok || !k || row.status === "deciding") throw new FlexibleLinkNotFoundError();
  return row;
}

/** The hosted page's read of a link, with what can be chosen now while in amount_selection. */
export async function getFlexibleLink(d: FlexibleDeps, req: GetFlexibleLinkRequest): Promise<Answer> {
  const row = await authorised(d, req.operationId, req.k);
  const answer = await answerOf(d, row, undefined, false);
  if (answer.link?.status === "amount_selection") answer.intervals = await intervalsFor(d, inputOf(row));
  return answer;
}

/**
 * The payer confirmed an amount on the hosted page. Under a claim of the link (no lock
 * held across the calls to matching; a concurrent confirmation waits for it, then
 * answers its decision or decides again): an expired
 * link creates nothing and emits nothing (`expired`); an amount that can be admitted
 * creates the payment at that amount (`created`); one taken meanwhile answers
 * `amount_unavailable` with the amounts available now, or, when nothing is left, creates
 * the payment as `rejected` with the ordinary rejected event (`rejected`). A decided link
 * answers its decision again. A claim whose process died lapses after `claimMs`: the
 * next confirmation decides again (the payment, if one was created, is found by its key).
 */
export async function confirmFlexibleAmount(
  d: FlexibleDeps,
  req: ConfirmFlexibleAmountRequest,
  signal: AbortSignal,
): Promise<Answer> {
  const found = await authorised(d, req.operationId, req.k);
  const waitUntil = Date.now() + claimMs(d);
  for (;;) {
    const row = await d.store.links.claim(found.operation_id, "amount_selection", claimMs(d));
    if (!row) {
      const now = await findLink(d, found.operation_id);
      if (!now) throw new FlexibleLinkNotFoundError();
      if (now.status !== "amount_selection")
        return { ...(await answerOf(d, now, undefined, true)), outcome: now.status };
      await waitForClaim(waitUntil, signal);
      continue;
    }
    const claim = row.claim ?? "";
    try {
      return await confirmClaimed(d, row, claim, req, signal);
    } finally {
      await d.store.links.release(row.operation_id, claim).catch(() => {});
    }
  }
}

/** The confirmation of a link in `amount_selection` whose claim `claim` the caller holds. */
async function confirmClaimed(
  d: FlexibleDeps,
  row: LinkRow,
  claim: string,
  req: ConfirmFlexibleAmountRequest,
  signal: AbortSignal,
): Promise<Answer> {
  if (row.expires_at.getTime() <= Date.now())
    return { link: linkMessage(row), outcome: "expired", replayed: false } satisfies Answer;
  const amount = amountOf(req.amount, "amount");
  const input = inputOf(row);
  if ((input.min && amount.lt(input.min)) || (input.max && amount.gt(input.max)))
    throw invalid("amount", "amount must lie within the link's bounds");
  const chosen = amount.toFixed(2);
  const slotAmount = await admit(d, input, row.operation_id, chosen);
  if (slotAmount !== undefined) {
    const { row: op } = await createOrRelease(d, createInput(input, slotAmount), signal);
    if (!(await d.store.links.decide(row.operation_id, claim, "created")))
      throw new DependencyUnavailableError("link changed meanwhile; retry");
    return {
      link: linkMessage({ ...row, status: "created" }),
      operation: toOperation(op),
      outcome: "created",
      replayed: false,
    };
  }
  const intervals = await intervalsFor(d, input);
  if (intervals.length > 0)
    return {
      link: linkMessage(row),
      outcome: "amount_unavailable",
      intervals,
      replayed: false,
    } satisfies Answer;
  // Taken in the last moment and nothing left: the payment exists, rejected, with the
  // ordinary rejected event (a create nobody accepted records `rejected` without one).
  const op = await rejectedPayment(d, row.operation_id, claim, createInput(input, chosen), signal);
  return {
    link: linkMessage({ ...row, status: "rejected" }),
    operation: toOperation(op),
    outcome: "rejected",
    replayed: false,
  };
}

/**
 * Creates the payment through the ordinary path, which records it `rejected` without an
 * event, then announces it. The announcement is written in one short transaction (no
 * call out in it) with the link's move from `amount_selection` to `rejected`, conditional
 * on the caller's claim: it commits with that move or not at all, so a confirmation
 * retried after a failure announces the payment again only if the first announcement
 * rolled back, and exactly one `payment.rejected` is ever queued.
 */
async function rejectedPayment(
  d: FlexibleDeps,
  linkId: string,
  claim: string,
  input: CreateInput,
  signal: AbortSignal,
): Promise<OperationRow> {
  let admitted: OperationRow | undefined;
  try {
    ({ row: admitted } = await createOperation(d, input, signal, { forLink: true })); // an amount freed meanwhile
  } catch (err) {
    if (!(err instanceof NoProviderAcceptedError)) throw err;
  }
  return d.store.transaction(async (tx) => {
    const row = admitted ?? (await d.store.findByMop(input.shopId, input.mop, tx));
    if (!row) throw new DependencyUnavailableError("payment not recorded; retry");
    if (!(await d.store.links.decide(linkId, claim, "rejected", tx)))
      throw new DependencyUnavailableError("link changed meanwhile; retry");
    if (admitted || row.status !== "rejected") return row;
    const { row: announced } = await d.store.applyFact(row, { kind: "refusal_announced" }, { tx });
    if (!announced) throw new DependencyUnavailableError("payment changed meanwhile; retry");
    return announced;
  });
}
