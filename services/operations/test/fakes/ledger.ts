import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import {
  CURRENCIES,
  type Currency,
  Decimal,
  formatAmount,
  isCurrency,
  isMethod,
  METHODS,
  type PricingTerms,
  parseQuoteAmount,
  priceFromTerms,
  type TierTerms,
} from "@gw/money";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { fakeErrors } from "./errors.ts";

/**
 * The ledger as operations uses it, in memory, behind connect's router transport (so
 * requests, answers and errors cross the wire encoding as with the real service). Kept:
 * pricing (PutPricing, PutFxRate, Quote and GetPricingTerms priced by the same
 * `priceFromTerms` as the ledger, with its pricing version), balances (PostAdjustment,
 * GetBalances) and a payout's reserve (ReservePayout, ReleaseRefusedPayout, with the
 * ledger's per-operation states and versions: one reserve per routing, none after a
 * release at that or a newer version, a release posted once). Not kept: the postings
 * of operation events, the audit reads, tier validation beyond what a quote needs.
 * `fake.contract.ts` checks it against the real ledger.
 */
export class FakeLedger {
  readonly #tiers = new Map<string, TierTerms[]>();
  readonly #rates = new Map<string, { rate: string; source: string }>();
  readonly #accounts = new Map<string, Decimal>();
  readonly #reserves = new Map<string, Reserve>();
  readonly #adjustments = new Set<string>();
  #version = 0n;
  /** Calls to answer with UNAVAILABLE from now on, by method name (`reservePayout`, `quote`...). */
  readonly down = new Set<string>();

  /** A client of this ledger over the router transport. */
  client(): Client<typeof LedgerService> {
    const transport = createRouterTransport(({ service }) => {
      service(LedgerService, {
        quote: (req) => this.#guard("quote", () => this.#quote(req)),
        getPricingTerms: (req) => this.#guard("getPricingTerms", () => this.#terms(req)),
        getBalances: (req) => this.#guard("getBalances", () => this.#balances(req.shopId)),
        putPricing: (req) =>
          this.#guard("putPricing", () => {
            if (!isMethod(req.method)) throw invalid("method", "method is not supported");
            this.#version++;
            this.#tiers.set(tierKey(req.shopId, req.method, "payin"), sorted(req.payin));
            this.#tiers.set(tierKey(req.shopId, req.method, "payout"), sorted(req.payout));
            return {};
          }),
        putFxRate: (req) =>
          this.#guard("putFxRate", () => {
            this.#version++;
            this.#rates.set(`${req.from}>${req.to}`, {
              rate: new Decimal(req.rate).toFixed(),
              source: req.source || "manual",
            });
            return {};
          }),
        postAdjustment: (req) =>
          this.#guard("postAdjustment", () => {
            const currency = currencyOf(req.currency, "currency");
            if (!this.#adjustments.has(req.adjustmentId)) {
              this.#adjustments.add(req.adjustmentId);
              this.#post(req.shopId, currency, "available", new Decimal(req.amount));
            }
            return { transferId: `adj:${req.adjustmentId}` };
          }),
        reservePayout: (req) => this.#guard("reservePayout", () => this.#reserve(req)),
        releaseRefusedPayout: (req) =>
          this.#guard("releaseRefusedPayout", () => {
            if (!req.shopId) throw invalid("shop_id", "shop_id is required");
            if (!req.operationId) throw invalid("operation_id", "operation_id is required");
            if (req.operationVersion <= 0n)
              throw invalid("operation_version", "operation_version must be positive");
            this.#release(req.operationId, req.operationVersion);
            return {};
          }),
      });
    });
    return createClient(LedgerService, transport);
  }

  #quote(req: TermsRequest & { amount: string }) {
    const key = termsKey(req);
    const amount = parseQuoteAmount(req.amount);
    if (!amount) throw invalid("amount", "amount must be a positive decimal string");
    const q = priceFromTerms(this.#pricingTerms(key), amount, key.direction);
    if ("refusal" in q) throw fakeErrors.quoteRefused(q.refusal, q.message, q.field);
    return q;
  }

  #terms(req: TermsRequest) {
    const terms = this.#pricingTerms(termsKey(req));
    return {
      tiers: terms.tiers,
      settlementCurrency: terms.settlementCurrency,
      fxRate: terms.fx?.rate,
      fxSource: terms.fx?.source,
      fxRateMissing: terms.settlementCurrency !== terms.currency && terms.fx === undefined,
      pricingVersion: this.#version,
    };
  }

  #pricingTerms(key: ReturnType<typeof termsKey>): PricingTerms {
    return {
      tiers: this.#tiers.get(tierKey(key.shopId, key.method, key.direction)) ?? [],
      currency: key.currency,
      settlementCurrency: key.settlementCurrency,
      fx:
        key.settlementCurrency === key.currency
          ? undefined
          : this.#rates.get(`${key.currency}>${key.settlementCurrency}`),
    };
  }

  #balances(shopId: string) {
    if (!shopId.trim()) throw invalid("shop_id", "shop_id is required");
    return {
      balances: (Object.keys(CURRENCIES) as Currency[]).map((currency) => {
        const balance = this.#account(shopId, currency, "available");
        const reserved = this.#account(shopId, currency, "reserved");
        return {
          currency,
          balance: formatAmount(balance, currency),
          reserved: formatAmount(reserved, currency),
          currentMinus: formatAmount(Decimal.max(balance.plus(reserved).neg(), 0), currency),
        };
      }),
    };
  }

  /** The ledger's `payoutPending`: no balance check (a shop may go into its current minus). */
  #reserve(req: {
    shopId: string;
    operationId: string;
    settlementAmount: string;
    settlementCurrency: string;
    operationVersion: bigint;
  }) {
    if (!req.shopId) throw invalid("shop_id", "shop_id is required");
    if (!req.operationId) throw invalid("operation_id", "operation_id is required");
    const currency = currencyOf(req.settlementCurrency, "settlement_currency");
    if (!/^\d+(\.\d+)?$/.test(req.settlementAmount) || new Decimal(req.settlementAmount).lte(0))
      throw invalid("settlement_amount", "settlement_amount must be a positive decimal string");
    const amount = new Decimal(req.settlementAmount);
    const r = this.#reserves.get(req.operationId) ?? {
      shopId: req.shopId,
      state: "none",
      generation: 0n,
    };
    r.shopId = req.shopId;
    this.#reserves.set(req.operationId, r);
    if (r.state === "none" || (r.state === "released" && req.operationVersion > r.generation)) {
      this.#post(req.shopId, currency, "available", amount.neg());
      this.#post(req.shopId, currency, "reserved", amount);
      Object.assign(r, { state: "reserved", currency, amount });
      r.generation = max(r.generation, req.operationVersion);
      return { posted: true, notHeld: false };
    }
    if (r.state !== "reserved") return { posted: false, notHeld: true };
    r.generation = max(r.generation, req.operationVersion);
    return { posted: false, notHeld: false };
  }

  /** The ledger's `payoutRefused`: once per newer version, never after a completion. */
  #release(operationId: string, version: bigint) {
    const r = this.#reserves.get(operationId);
    if (!r || version <= r.generation) {
      // The ledger records the release of a payout it never reserved, so a late reserve of it posts nothing.
      if (!r) this.#reserves.set(operationId, { shopId: "", state: "released", generation: version });
      return;
    }
    if (r.state === "reserved" && r.currency && r.amount) {
      this.#post(r.shopId, r.currency, "reserved", r.amount.neg());
      this.#post(r.shopId, r.currency, "available", r.amount);
    }
    r.state = "released";
    r.generation = version;
  }

  #account(shopId: string, currency: string, kind: string): Decimal {
    return this.#accounts.get(`${shopId}|${currency}|${kind}`) ?? new Decimal(0);
  }

  #post(shopId: string, currency: string, kind: string, amount: Decimal) {
    this.#accounts.set(`${shopId}|${currency}|${kind}`, this.#account(shopId, currency, kind).plus(amount));
  }

  async #guard<T>(method: string, fn: () => T): Promise<T> {
    if (this.down.has(method)) throw fakeErrors.unavailable();
    return fn();
  }
}

interface Reserve {
  shopId: string;
  state: "none" | "reserved" | "released";
  generation: bigint;
  currency?: string;
  amount?: Decimal;
}

interface TermsRequest {
  shopId: string;
  method: string;
  direction: string;
  currency: string;
  settlementCurrency: string;
}

const invalid = fakeErrors.validation;

const isDirection = (d: string): d is "payin" | "payout" => d === "payin" || d === "payout";

const max = (a: bigint, b: bigint) => (a > b ? a : b);

const tierKey = (shopId: string, method: string, direction: string) => `${shopId}|${method}|${direction}`;

const sorted = (tiers: TierTerms[]): TierTerms[] =>
  tiers
    .map((t) => ({
      minAmount: new Decimal(t.minAmount).toFixed(),
      maxAmount: new Decimal(t.maxAmount).toFixed(),
      percent: new Decimal(t.percent).toFixed(),
      fixed: new Decimal(t.fixed).toFixed(),
    }))
    .sort((a, b) => new Decimal(a.minAmount).cmp(b.minAmount));

function currencyOf(text: string, field: string): Currency {
  if (!isCurrency(text)) throw invalid(field, `${field} is not a supported currency`);
  return text;
}

/** The ledger's `termsKey`: validated, the settlement currency defaulting to the currency. */
function termsKey(req: TermsRequest) {
  if (!req.shopId.trim()) throw invalid("shop_id", "shop_id is required");
  if (!isMethod(req.method)) throw invalid("method", "method is not supported");
  const direction = req.direction;
  if (!isDirection(direction)) throw invalid("direction", "direction must be payin or payout");
  const currency = currencyOf(req.currency, "currency");
  if (METHODS[req.method].currency !== currency)
    throw invalid("currency", "currency does not match the method");
  const settlementCurrency = req.settlementCurrency
    ? currencyOf(req.settlementCurrency, "settlement_currency")
    : currency;
  return { shopId: req.shopId, method: req.method, direction, currency, settlementCurrency };
}
