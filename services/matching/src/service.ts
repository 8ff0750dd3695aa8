import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { isCurrency, isMethod, METHODS, type Method, parseRequestAmount } from "@gw/money";
import type {
  AddPayoutRequest,
  AdmitRequest,
  AvailabilityRequest,
  ConfirmSlotRequest,
  GetPoolDepthRequest,
  GetPoolPayoutRequest,
  MatchingService,
  RecommendationsRequest,
  ReleaseSlotRequest,
  SweepPoolRequest,
} from "@gw/proto/gateway/matching/v1/matching_pb";
import { invalid, payoutNotInPool, poolRefused } from "./errors.ts";
import {
  DEFAULT_RECOMMENDATIONS,
  formatCents,
  MAX_RECOMMENDATIONS,
  MAX_SLOT_LIFETIME_MS,
  METHOD_MINIMUMS,
  MIN_SLOT_LIFETIME_MS,
  toCents,
} from "./policy.ts";
import { type ContributionRow, type PoolStore, type SlotRow, toPoolPayoutMessage } from "./pool.ts";
import type { Coverage, PoolReads, ReadResult } from "./reads.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RELEASE_REASONS = new Set(["expired", "rejected", "cancelled"]);
const COVERAGES = new Set(["full", "partial", "none"]);
/** Rows handled per sweep round at most, so one round never holds many locks. */
export const SWEEP_BATCH = 500;

function uuid(value: string, field: string): string {
  if (!UUID.test(value)) throw invalid(field, `${field} must be a UUID`);
  return value.toLowerCase();
}

/** The method and currency of a request, checked to belong together. */
function methodOf(req: { method: string; currency: string }): Method {
  if (!isCurrency(req.currency)) throw invalid("currency", "unknown currency");
  if (!isMethod(req.method)) throw invalid("method", "unknown method");
  if (METHODS[req.method].currency !== req.currency)
    throw invalid("method", "method does not belong to currency");
  return req.method;
}

/** A routing generation: 0 (none) or positive, within a safe integer. */
function generationOf(value: bigint): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER))
    throw invalid("generation", "generation out of range");
  return Number(value);
}

/** A positive scale-2 amount, canonical text. */
function amount(value: string, field: string): string {
  const parsed = parseRequestAmount(value);
  if (parsed === undefined || !parsed.gt(0))
    throw invalid(field, `${field} must be a positive amount with two decimals`);
  return parsed.toFixed(2);
}

function slotMessage(slot: SlotRow) {
  return {
    payinId: slot.payin_id,
    payoutId: slot.payout_id,
    amount: slot.amount,
    status: slot.status,
    expiresAt: slot.expires_at,
    destination: {
      number: slot.number,
      name: slot.name,
      ...(slot.bankname === null ? {} : { bankname: slot.bankname }),
    },
    ...(slot.release_reason === null ? {} : { releaseReason: slot.release_reason }),
    method: slot.method,
    currency: slot.currency,
  };
}

function contributionMessage(c: ContributionRow) {
  return { id: c.id, payinId: c.payin_id, amount: c.amount, completedAt: c.completed_at };
}

function readResponse(req: { method: string; currency: string; coverage: string }, result: ReadResult) {
  return {
    method: req.method,
    currency: req.currency,
    evaluatedAt: result.evaluatedAt,
    coverage: req.coverage,
    reserved: false,
    truncated: result.truncated,
    intervals: result.intervals.map((i) => ({ minAmount: formatCents(i.lo), maxAmount: formatCents(i.hi) })),
    recommendations: result.recommendations.map((r) => ({
      amount: formatCents(r.amount),
      delta: formatCents(r.delta),
    })),
  };
}

/** The validated common part of both reads. */
function readInput(req: {
  method: string;
  currency: string;
  minAmount: string;
  maxAmount: string;
  coverage: string;
}) {
  const method = methodOf(req);
  const lo = toCents(amount(req.minAmount, "min_amount"));
  const hi = toCents(amount(req.maxAmount, "max_amount"));
  if (lo > hi) throw invalid("min_amount", "min_amount must not exceed max_amount");
  if (!COVERAGES.has(req.coverage)) throw invalid("coverage", "coverage must be full, partial or none");
  return {
    method,
    currency: req.currency,
    lo,
    hi,
    minimum: toCents(METHOD_MINIMUMS[method]),
    coverage: req.coverage as Coverage,
  };
}

/** The matching service's RPCs: validation and mapping around the pool engine. */
export class MatchingHandlers implements ServiceImpl<typeof MatchingService> {
  readonly #store: PoolStore;
  readonly #reads: PoolReads;

  constructor(store: PoolStore, reads: PoolReads) {
    this.#store = store;
    this.#reads = reads;
  }

  async getPoolDepth(req: GetPoolDepthRequest) {
    if (!isCurrency(req.currency)) throw invalid("currency", "unknown currency");
    const depth = await this.#store.depth(req.method, req.currency);
    return { payouts: BigInt(depth.payouts), freeAmount: formatCents(toCents(depth.free)) };
  }

  async addPayout(req: AddPayoutRequest) {
    const method = methodOf(req);
    const windowEndsAt = Date.parse(req.windowEndsAt);
    if (Number.isNaN(windowEndsAt) || !/^\d{4}-\d{2}-\d{2}T/.test(req.windowEndsAt))
      throw invalid("window_ends_at", "window_ends_at must be an RFC 3339 timestamp");
    const number = req.destination?.number ?? "";
    if (number === "") throw invalid("destination.number", "destination.number is required");
    const result = await this.#store.addPayout({
      operationId: uuid(req.operationId, "operation_id"),
      shopId: uuid(req.shopId, "shop_id"),
      method,
      currency: req.currency,
      amount: amount(req.amount, "amount"),
      number,
      name: req.destination?.name ?? "",
      bankname: req.destination?.bankname ?? null,
      windowEndsAt: new Date(windowEndsAt).toISOString(),
    });
    if ("refused" in result) throw poolRefused(result);
    return { payout: toPoolPayoutMessage(result.payout), created: result.created };
  }

  async admit(req: AdmitRequest) {
    const method = methodOf(req);
    const lifetime = Number(req.slotLifetimeMs);
    if (!(lifetime >= MIN_SLOT_LIFETIME_MS && lifetime <= MAX_SLOT_LIFETIME_MS))
      throw invalid("slot_lifetime_ms", "slot_lifetime_ms must lie between 1 s and 24 h");
    const result = await this.#store.admit({
      payinId: uuid(req.payinId, "payin_id"),
      shopId: uuid(req.shopId, "shop_id"),
      method,
      currency: req.currency,
      amount: amount(req.amount, "amount"),
      minimum: METHOD_MINIMUMS[method],
      slotLifetimeMs: lifetime,
      generation: generationOf(req.generation),
    });
    if ("refused" in result) throw poolRefused(result);
    return { slot: slotMessage(result.slot), created: result.created };
  }

  async releaseSlot(req: ReleaseSlotRequest) {
    if (!RELEASE_REASONS.has(req.reason))
      throw invalid("reason", "reason must be expired, rejected or cancelled");
    const result = await this.#store.release(
      uuid(req.payinId, "payin_id"),
      req.reason as "expired" | "rejected" | "cancelled",
      generationOf(req.generation),
    );
    if ("refused" in result) throw poolRefused(result);
    return { slot: slotMessage(result.slot) };
  }

  async confirmSlot(req: ConfirmSlotRequest) {
    const result = await this.#store.confirm(
      uuid(req.payinId, "payin_id"),
      amount(req.actualAmount, "actual_amount"),
    );
    if ("refused" in result) throw poolRefused(result);
    return {
      slot: slotMessage(result.slot),
      contribution: contributionMessage(result.contribution),
      payout: toPoolPayoutMessage(result.payout, result.contributions),
      payoutCompleted: result.payoutCompleted,
    };
  }

  async getPoolPayout(req: GetPoolPayoutRequest) {
    const id = uuid(req.operationId, "operation_id");
    const payout = await this.#store.payout(id);
    if (payout === undefined) throw payoutNotInPool();
    return { payout: toPoolPayoutMessage(payout, await this.#store.contributions(id)) };
  }

  async sweepPool(req: SweepPoolRequest) {
    const limit = req.limit > 0 && req.limit <= SWEEP_BATCH ? req.limit : SWEEP_BATCH;
    const closed = await this.#store.closeEndedWindows(limit);
    return {
      closedPayouts: closed.map((c) => toPoolPayoutMessage(c.payout, c.contributions)),
    };
  }

  async availability(req: AvailabilityRequest, ctx: HandlerContext) {
    const result = await this.#reads.availability(readInput(req), ctx.timeoutMs());
    return readResponse(req, result);
  }

  async recommendations(req: RecommendationsRequest, ctx: HandlerContext) {
    const input = readInput(req);
    const wanted = toCents(amount(req.amount, "amount"));
    if (req.limit < 0 || req.limit > MAX_RECOMMENDATIONS)
      throw invalid("limit", "limit must lie between 1 and 10");
    const limit = req.limit === 0 ? DEFAULT_RECOMMENDATIONS : req.limit;
    const result = await this.#reads.recommendations({ ...input, amount: wanted, limit }, ctx.timeoutMs());
    return readResponse(req, result);
  }
}
