import { Decimal as DecimalJs } from "decimal.js";

/**
 * The one Decimal of the project: 40 significant digits (far above any amount times any
 * rate) and half-up rounding, the rule Russian banks and most card schemes apply to
 * kopecks. Never construct amounts from JS numbers; parse the wire strings.
 */
export const Decimal = DecimalJs.clone({ precision: 40, rounding: DecimalJs.ROUND_HALF_UP });
export type Decimal = InstanceType<typeof Decimal>;

/** Currencies the gateway keeps balances in, with the scale every amount is stored at. */
export const CURRENCIES = {
  RUB: { scale: 2 },
  USDT: { scale: 6 },
} as const;
export type Currency = keyof typeof CURRENCIES;

/** Payment methods and the one currency each belongs to. */
export const METHODS = {
  WT_RUB_C2C: { currency: "RUB", rail: "card" },
  WT_RUB_PHONE: { currency: "RUB", rail: "phone" },
} as const satisfies Record<string, { currency: Currency; rail: "card" | "phone" }>;
export type Method = keyof typeof METHODS;

export const isCurrency = (value: string): value is Currency => Object.hasOwn(CURRENCIES, value);
export const isMethod = (value: string): value is Method => Object.hasOwn(METHODS, value);

/** Request amounts are decimal strings with scale 2: digits, a point, two digits. */
const REQUEST_AMOUNT = /^(0|[1-9]\d{0,15})\.\d{2}$/;

/** Parses a request amount ("1000.00"); returns undefined when it is not scale-2 decimal text. */
export function parseRequestAmount(text: string): Decimal | undefined {
  return REQUEST_AMOUNT.test(text) ? new Decimal(text) : undefined;
}

/** Rounds to the currency's scale (half-up) and prints without exponent. */
export function formatAmount(value: Decimal, currency: Currency): string {
  return value.toFixed(CURRENCIES[currency].scale);
}

/** Rounds to the currency's scale, returning a Decimal. */
export function roundAmount(value: Decimal, currency: Currency): Decimal {
  return value.toDecimalPlaces(CURRENCIES[currency].scale);
}

/** A pricing tier's terms: percent of the converted amount plus a fixed fee, both in settlement currency. */
export interface CommissionTerms {
  percent: string;
  fixed: string;
}

/**
 * Decimal places of a quoted FX rate. The rate an operation shows (`fx_rate`, six places
 * in the spec's sample) is the rate its figures are computed with, so that
 * `recorded_amount = actual_amount × fx_rate` holds for what the merchant reads; a rate
 * stored with more places is rounded half-up to these once, at the quote.
 */
export const FX_RATE_SCALE = 6;

/** The rate a quote uses and shows: the stored rate rounded half-up to `FX_RATE_SCALE` places. */
export function quotedRate(rate: Decimal): Decimal {
  return rate.toDecimalPlaces(FX_RATE_SCALE);
}

export interface SettlementFigures {
  /** The amount in settlement currency (`amount × rate`), at the settlement scale. */
  converted: Decimal;
  commission: Decimal;
  /** What moves on the shop balance: a payin credits `converted − commission`, a payout charges `converted + commission`. */
  settlement: Decimal;
}

/**
 * The one commission and settlement rule, used for the quote at create and again on the
 * captured amount at terminal. Each figure is rounded half-up to the settlement
 * currency's scale once, and `settlement` is derived from the rounded parts, so the
 * three always add up exactly. Nothing captured means no commission.
 *
 * A payin's commission never exceeds what was captured: when the fee (percent plus the
 * fixed part) is larger than the converted amount, the commission is the converted
 * amount and the shop is credited zero. A payment's settlement is thus never negative,
 * so a payer paying less than asked can never debit the shop (docs/architecture.md,
 * "Commission"). A payout's commission is charged in full on top of its amount.
 * The rate is taken as quoted (`quotedRate`), six places.
 */
export function settlementFigures(input: {
  amount: Decimal;
  settlementCurrency: Currency;
  fxRate?: Decimal | undefined;
  terms: CommissionTerms;
  direction: "payin" | "payout";
}): SettlementFigures {
  const rate = input.fxRate === undefined ? new Decimal(1) : quotedRate(input.fxRate);
  const converted = roundAmount(input.amount.times(rate), input.settlementCurrency);
  const fee = input.amount.isZero()
    ? new Decimal(0)
    : roundAmount(
        converted.times(input.terms.percent).dividedBy(100).plus(input.terms.fixed),
        input.settlementCurrency,
      );
  if (input.direction === "payout") return { converted, commission: fee, settlement: converted.plus(fee) };
  const commission = Decimal.min(fee, converted);
  return { converted, commission, settlement: converted.minus(commission) };
}

/** Positive decimal text a quote takes: up to 20 integer digits and 6 fraction digits, not zero. */
const QUOTE_AMOUNT = /^(0|[1-9]\d{0,19})(\.\d{1,6})?$/;

/** Parses a quote's amount; undefined when it is not positive decimal text (`validation_failed`). */
export function parseQuoteAmount(text: string): Decimal | undefined {
  if (!QUOTE_AMOUNT.test(text)) return undefined;
  const amount = new Decimal(text);
  return amount.isZero() ? undefined : amount;
}

/** A pricing tier as the wire and the ledger's read carry it: decimal strings. */
export interface TierTerms {
  minAmount: string;
  maxAmount: string;
  percent: string;
  fixed: string;
}

/**
 * Everything a quote depends on for one shop, method, direction, currency and settlement
 * currency: every tier (closed ranges that do not overlap), and when the currencies differ
 * the stored rate and its source, or none (`fx` undefined: the rate is missing).
 */
export interface PricingTerms {
  tiers: TierTerms[];
  currency: Currency;
  settlementCurrency: Currency;
  fx?: { rate: string; source: string } | undefined;
}

/** A quote's answer as the ledger's Quote gives it: figures at the settlement scale, the tier and rate used. */
export interface PricedQuote {
  commissionAmount: string;
  settlementAmount: string;
  settlementCurrency: Currency;
  fxRate?: string | undefined;
  fxSource?: string | undefined;
  tier: TierTerms;
}

/** Why a quote is refused: the ledger's FAILED_PRECONDITION with this code, message and field. */
export interface QuoteRefusal {
  refusal: "pricing_not_configured" | "fx_rate_missing";
  message: string;
  field: string;
}

/**
 * Prices an amount from its terms: the tier whose range holds it, the rate rounded to
 * `FX_RATE_SCALE`, then `settlementFigures`. The one computation behind the ledger's Quote
 * and operations' cached quote, so both give the same answer for the same terms.
 */
export function priceFromTerms(
  terms: PricingTerms,
  amount: Decimal,
  direction: "payin" | "payout",
): PricedQuote | QuoteRefusal {
  const tier = terms.tiers.find((t) => amount.gte(t.minAmount) && amount.lte(t.maxAmount));
  if (!tier) {
    return {
      refusal: "pricing_not_configured",
      message: "no pricing tier covers this amount",
      field: "amount",
    };
  }
  let fx: { rate: Decimal; source: string } | undefined;
  if (terms.settlementCurrency !== terms.currency) {
    if (!terms.fx) {
      return {
        refusal: "fx_rate_missing",
        message: `no rate from ${terms.currency} to ${terms.settlementCurrency}`,
        field: "settlement_currency",
      };
    }
    // The operation shows and settles at this rate, six places.
    fx = { rate: quotedRate(new Decimal(terms.fx.rate)), source: terms.fx.source };
  }
  const plain = (text: string) => new Decimal(text).toFixed();
  const q = settlementFigures({
    amount,
    settlementCurrency: terms.settlementCurrency,
    fxRate: fx?.rate,
    terms: { percent: plain(tier.percent), fixed: plain(tier.fixed) },
    direction,
  });
  return {
    commissionAmount: formatAmount(q.commission, terms.settlementCurrency),
    settlementAmount: formatAmount(q.settlement, terms.settlementCurrency),
    settlementCurrency: terms.settlementCurrency,
    fxRate: fx?.rate.toFixed(FX_RATE_SCALE),
    fxSource: fx?.source,
    tier: {
      minAmount: plain(tier.minAmount),
      maxAmount: plain(tier.maxAmount),
      percent: plain(tier.percent),
      fixed: plain(tier.fixed),
    },
  };
}
