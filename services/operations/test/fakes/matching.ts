import { randomUUID } from "node:crypto";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { Decimal, isCurrency, isMethod, METHODS, type Method, parseRequestAmount } from "@gw/money";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { fakeErrors } from "./errors.ts";

/**
 * The matching service (the self-matching pool) as operations uses it, in memory, behind
 * connect's router transport: AddPayout, Admit, ReleaseSlot, ConfirmSlot, GetPoolPayout
 * and Availability, the calls of steps/pool.ts, steps/pool-connector.ts,
 * usecases/pool-events.ts and usecases/flexible/link.ts. Kept as the real service keeps
 * them (services/matching/README.md, src/pool.ts): a payout idempotent on its id (other
 * terms: `idempotency_conflict`); the admission policy (an exact close, or the method's
 * minimum on both sides of the slot; the smallest fitting remainder first, then the
 * oldest, among open payouts whose window has not ended); a slot per payin, replayed while
 * reserved or confirmed, forgotten once released and admitted afresh; every release
 * remembered with its generation, slot or no slot, so an Admit of that attempt or an older
 * one is `slot_settled` and a slot of a newer one is left alone; a confirmation once per
 * actual amount, the payout completed when its contributions reach its amount. Not kept:
 * GetPoolDepth, SweepPool (the window's hand-off), Recommendations, the outbox events, the
 * one-read-per-replica limiter. `matching.contract.ts` checks it against the real service.
 */
export class FakeMatching {
  readonly #payouts = new Map<string, Payout>();
  readonly #slots = new Map<string, Slot>();
  /** payin id → the newest generation released (0: none). */
  readonly #released = new Map<string, bigint>();
  readonly #clock: () => Date;
  #seq = 0;
  /** Calls to answer with UNAVAILABLE from now on, by method name (`admit`, `releaseSlot`...). */
  readonly down = new Set<string>();
  /** Calls whose answer is lost from now on: the call takes effect, then answers UNAVAILABLE. */
  readonly lost = new Set<string>();

  constructor(options: { clock?: () => Date } = {}) {
    this.#clock = options.clock ?? (() => new Date());
  }

  /** A client of this pool over the router transport. */
  client(): Client<typeof MatchingService> {
    const transport = createRouterTransport(({ service }) => {
      service(MatchingService, {
        addPayout: (req) =>
          this.#guard("addPayout", () => {
            const method = methodOf(req);
            const windowEndsAt = Date.parse(req.windowEndsAt);
            if (Number.isNaN(windowEndsAt) || !/^\d{4}-\d{2}-\d{2}T/.test(req.windowEndsAt))
              throw invalid("window_ends_at", "window_ends_at must be an RFC 3339 timestamp");
            const number = req.destination?.number ?? "";
            if (number === "") throw invalid("destination.number", "destination.number is required");
            const operationId = uuid(req.operationId, "operation_id");
            const shopId = uuid(req.shopId, "shop_id");
            const total = amountOf(req.amount, "amount");
            const stored = this.#payouts.get(operationId);
            if (stored) {
              const same =
                stored.shopId === shopId &&
                stored.method === method &&
                stored.currency === req.currency &&
                stored.amount.eq(total);
              if (!same) throw fakeErrors.idempotencyConflict();
              return { payout: this.#payoutMessage(stored, false), created: false };
            }
            const payout: Payout = {
              operationId,
              shopId,
              method,
              currency: req.currency,
              amount: total,
              free: total,
              reserved: new Decimal(0),
              paid: new Decimal(0),
              status: "open",
              windowEndsAt: new Date(windowEndsAt),
              destination: {
                number,
                name: req.destination?.name ?? "",
                bankname: req.destination?.bankname,
              },
              createdAt: this.#clock(),
              seq: this.#seq++,
            };
            this.#payouts.set(operationId, payout);
            return { payout: this.#payoutMessage(payout, false), created: true };
          }),
        admit: (req) =>
          this.#guard("admit", () => {
            const method = methodOf(req);
            const lifetime = Number(req.slotLifetimeMs);
            if (!(lifetime >= MIN_SLOT_LIFETIME_MS && lifetime <= MAX_SLOT_LIFETIME_MS))
              throw invalid("slot_lifetime_ms", "slot_lifetime_ms must lie between 1 s and 24 h");
            const payinId = uuid(req.payinId, "payin_id");
            const shopId = uuid(req.shopId, "shop_id");
            const amount = amountOf(req.amount, "amount");
            const generation = generationOf(req.generation);
            // A release of this attempt or a newer one, even before any slot: nothing is reserved.
            if (generation > 0n && (this.#released.get(payinId) ?? 0n) >= generation)
              throw fakeErrors.slotSettled(
                "the payin's slot was released by this routing attempt or a newer one",
              );
            const held = this.#slots.get(payinId);
            if (held && held.status !== "released") return { slot: this.#slotMessage(held), created: false };
            // A released slot was left by an earlier routing (a refused create, now retried): forgotten.
            if (held) this.#slots.delete(payinId);
            const payout = this.#pick(method, req.currency, amount, new Decimal(METHOD_MINIMUMS[method]));
            if (!payout) throw fakeErrors.amountUnavailable();
            payout.free = payout.free.minus(amount);
            payout.reserved = payout.reserved.plus(amount);
            const slot: Slot = {
              payinId,
              payoutId: payout.operationId,
              shopId,
              amount,
              status: "reserved",
              expiresAt: new Date(this.#clock().getTime() + lifetime),
              generation,
            };
            this.#slots.set(payinId, slot);
            return { slot: this.#slotMessage(slot), created: true };
          }),
        releaseSlot: (req) =>
          this.#guard("releaseSlot", () => {
            if (!RELEASE_REASONS.has(req.reason))
              throw invalid("reason", "reason must be expired, rejected or cancelled");
            const payinId = uuid(req.payinId, "payin_id");
            const generation = generationOf(req.generation);
            this.#released.set(payinId, max(this.#released.get(payinId) ?? 0n, generation));
            const slot = this.#slots.get(payinId);
            if (!slot) throw fakeErrors.notFound("no slot for this payin");
            if (slot.status === "confirmed") throw fakeErrors.slotSettled("the slot is already confirmed");
            // A slot a newer attempt holds is left alone; a released one is answered unchanged.
            if (slot.status === "reserved" && (generation === 0n || slot.generation <= generation)) {
              const payout = this.#payout(slot.payoutId);
              payout.free = payout.free.plus(slot.amount);
              payout.reserved = payout.reserved.minus(slot.amount);
              slot.status = "released";
              slot.releaseReason = req.reason;
            }
            return { slot: this.#slotMessage(slot) };
          }),
        confirmSlot: (req) =>
          this.#guard("confirmSlot", () => {
            const payinId = uuid(req.payinId, "payin_id");
            const actual = amountOf(req.actualAmount, "actual_amount");
            const slot = this.#slots.get(payinId);
            if (!slot) throw fakeErrors.notFound("no slot for this payin");
            if (slot.status === "released") throw fakeErrors.slotSettled("the slot is already released");
            const payout = this.#payout(slot.payoutId);
            if (slot.status === "reserved") {
              // Below the slot the difference goes back to the free remainder; above it, it is taken from it.
              const free = payout.free.plus(slot.amount).minus(actual);
              if (free.lt(0)) throw fakeErrors.amountUnavailable();
              payout.free = free;
              payout.reserved = payout.reserved.minus(slot.amount);
              payout.paid = payout.paid.plus(actual);
              if (payout.paid.eq(payout.amount)) {
                payout.status = "completed";
                payout.closedAt = this.#clock();
              }
              slot.status = "confirmed";
              slot.contribution = { id: randomUUID(), amount: actual, completedAt: this.#clock() };
            }
            const contribution = slot.contribution;
            if (!contribution?.amount.eq(actual))
              throw fakeErrors.slotSettled("the slot is already confirmed");
            const completed = payout.status === "completed";
            return {
              slot: this.#slotMessage(slot),
              contribution: contributionMessage(payinId, contribution),
              payout: this.#payoutMessage(payout, completed),
              payoutCompleted: completed,
            };
          }),
        getPoolPayout: (req) =>
          this.#guard("getPoolPayout", () => {
            const payout = this.#payouts.get(uuid(req.operationId, "operation_id"));
            if (!payout) throw fakeErrors.notFound("payout not in the pool");
            return { payout: this.#payoutMessage(payout, true) };
          }),
        availability: (req) =>
          this.#guard("availability", () => {
            const method = methodOf(req);
            const lo = amountOf(req.minAmount, "min_amount");
            const hi = amountOf(req.maxAmount, "max_amount");
            if (lo.gt(hi)) throw invalid("min_amount", "min_amount must not exceed max_amount");
            if (!COVERAGES.has(req.coverage))
              throw invalid("coverage", "coverage must be full, partial or none");
            const evaluatedAt = this.#clock().toISOString();
            const answer = {
              method: req.method,
              currency: req.currency,
              evaluatedAt,
              coverage: req.coverage,
            };
            if (req.coverage === "none")
              return { ...answer, reserved: false, truncated: false, intervals: [] };
            const scanned = this.#open(method, req.currency).filter((p) => p.free.gte(lo));
            const minimum = new Decimal(METHOD_MINIMUMS[method]);
            const merged = merge(
              scanned
                .slice(0, AVAILABILITY_SCAN_ROWS)
                .filter((p) => this.#admitting(p))
                .flatMap((p) => admissible(p.free, minimum, lo, hi)),
            );
            return {
              ...answer,
              reserved: false,
              truncated: scanned.length > AVAILABILITY_SCAN_ROWS || merged.length > MAX_INTERVALS,
              intervals: merged.slice(0, MAX_INTERVALS).map((i) => ({
                minAmount: i.lo.toFixed(2),
                maxAmount: i.hi.toFixed(2),
              })),
            };
          }),
      });
    });
    return createClient(MatchingService, transport);
  }

  /** Open payouts of a method and currency in matching order: free remainder, then age, then id. */
  #open(method: string, currency: string): Payout[] {
    return [...this.#payouts.values()]
      .filter((p) => p.method === method && p.currency === currency && p.status === "open")
      .sort((a, b) => a.free.cmp(b.free) || a.seq - b.seq || (a.operationId < b.operationId ? -1 : 1));
  }

  #admitting(p: Payout): boolean {
    return p.windowEndsAt.getTime() > this.#clock().getTime();
  }

  /** The admission policy: the first open payout whose remainder `x` closes exactly or leaves admissible. */
  #pick(method: string, currency: string, x: Decimal, minimum: Decimal): Payout | undefined {
    return this.#open(method, currency).find(
      (p) => this.#admitting(p) && (p.free.eq(x) || (x.gte(minimum) && p.free.gte(x.plus(minimum)))),
    );
  }

  #payout(id: string): Payout {
    const payout = this.#payouts.get(id);
    if (!payout) throw new Error(`the fake pool lost payout ${id}`);
    return payout;
  }

  #slotMessage(slot: Slot) {
    const payout = this.#payout(slot.payoutId);
    return {
      payinId: slot.payinId,
      payoutId: slot.payoutId,
      amount: slot.amount.toFixed(2),
      status: slot.status,
      expiresAt: slot.expiresAt.toISOString(),
      destination: payout.destination,
      releaseReason: slot.releaseReason,
      method: payout.method,
      currency: payout.currency,
    };
  }

  #payoutMessage(p: Payout, withContributions: boolean) {
    const contributions = withContributions
      ? [...this.#slots.values()]
          .filter((s) => s.payoutId === p.operationId && s.contribution)
          .map((s) => contributionMessage(s.payinId, s.contribution as Contribution))
          .sort((a, b) =>
            a.completedAt === b.completedAt ? (a.id < b.id ? -1 : 1) : a.completedAt < b.completedAt ? -1 : 1,
          )
      : [];
    return {
      operationId: p.operationId,
      shopId: p.shopId,
      method: p.method,
      currency: p.currency,
      amount: p.amount.toFixed(2),
      freeAmount: p.free.toFixed(2),
      reservedAmount: p.reserved.toFixed(2),
      paidAmount: p.paid.toFixed(2),
      // The sweep's hand-off is not kept: nothing is ever handed off here.
      handedOffAmount: "0.00",
      status: p.status,
      windowEndsAt: p.windowEndsAt.toISOString(),
      destination: p.destination,
      contributions,
      createdAt: p.createdAt.toISOString(),
      closedAt: p.closedAt?.toISOString(),
    };
  }

  async #guard<T>(method: string, fn: () => T): Promise<T> {
    if (this.down.has(method)) throw fakeErrors.unavailable();
    const answer = fn();
    if (this.lost.has(method)) throw fakeErrors.unavailable();
    return answer;
  }
}

interface Payout {
  operationId: string;
  shopId: string;
  method: Method;
  currency: string;
  amount: Decimal;
  free: Decimal;
  reserved: Decimal;
  paid: Decimal;
  status: "open" | "completed";
  windowEndsAt: Date;
  destination: { number: string; name: string; bankname?: string };
  createdAt: Date;
  closedAt?: Date;
  /** Insertion order: the age the policy orders by. */
  seq: number;
}

interface Slot {
  payinId: string;
  payoutId: string;
  /** The payin's shop. */
  shopId: string;
  amount: Decimal;
  status: "reserved" | "confirmed" | "released";
  releaseReason?: string;
  expiresAt: Date;
  /** The routing attempt that admitted it (0: none). */
  generation: bigint;
  contribution?: Contribution;
}

interface Contribution {
  id: string;
  amount: Decimal;
  completedAt: Date;
}

/** The matching service's `METHOD_MINIMUMS` (services/matching/src/policy.ts). */
const METHOD_MINIMUMS: Record<Method, string> = { WT_RUB_C2C: "100.00", WT_RUB_PHONE: "100.00" };
const MIN_SLOT_LIFETIME_MS = 1000;
const MAX_SLOT_LIFETIME_MS = 24 * 3600 * 1000;
const AVAILABILITY_SCAN_ROWS = 1000;
const MAX_INTERVALS = 200;
const RELEASE_REASONS = new Set(["expired", "rejected", "cancelled"]);
const COVERAGES = new Set(["full", "partial", "none"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STEP = new Decimal("0.01");

const invalid = fakeErrors.validation;

const max = (a: bigint, b: bigint) => (a > b ? a : b);

function uuid(value: string, field: string): string {
  if (!UUID.test(value)) throw invalid(field, `${field} must be a UUID`);
  return value.toLowerCase();
}

function methodOf(req: { method: string; currency: string }): Method {
  if (!isCurrency(req.currency)) throw invalid("currency", "unknown currency");
  if (!isMethod(req.method)) throw invalid("method", "unknown method");
  if (METHODS[req.method].currency !== req.currency)
    throw invalid("method", "method does not belong to currency");
  return req.method;
}

function generationOf(value: bigint): bigint {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER))
    throw invalid("generation", "generation out of range");
  return value;
}

function amountOf(text: string, field: string): Decimal {
  const parsed = parseRequestAmount(text);
  if (parsed === undefined || !parsed.gt(0))
    throw invalid(field, `${field} must be a positive amount with two decimals`);
  return parsed;
}

const contributionMessage = (payinId: string, c: Contribution) => ({
  id: c.id,
  payinId,
  amount: c.amount.toFixed(2),
  completedAt: c.completedAt.toISOString(),
});

interface Interval {
  lo: Decimal;
  hi: Decimal;
}

/** What a remainder `free` admits within `[lo, hi]`: `minimum..free - minimum`, and exactly `free`. */
function admissible(free: Decimal, minimum: Decimal, lo: Decimal, hi: Decimal): Interval[] {
  const out: Interval[] = [];
  const from = Decimal.max(minimum, lo);
  const upTo = Decimal.min(free.minus(minimum), hi);
  if (from.lte(upTo)) out.push({ lo: from, hi: upTo });
  if (free.gte(lo) && free.lte(hi) && free.gt(0)) out.push({ lo: free, hi: free });
  return out;
}

/** Sorted, with overlapping intervals and ones touching at the 0.01 step merged. */
function merge(intervals: Interval[]): Interval[] {
  const merged: Interval[] = [];
  for (const next of [...intervals].sort((a, b) => a.lo.cmp(b.lo))) {
    const last = merged.at(-1);
    if (last && next.lo.lte(last.hi.plus(STEP))) last.hi = Decimal.max(last.hi, next.hi);
    else merged.push({ ...next });
  }
  return merged;
}
