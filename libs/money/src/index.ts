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
 */
export function settlementFigures(input: {
  amount: Decimal;
  settlementCurrency: Currency;
  fxRate?: Decimal | undefined;
  terms: CommissionTerms;
  direction: "payin" | "payout";
}): SettlementFigures {
  const converted = roundAmount(input.amount.times(input.fxRate ?? 1), input.settlementCurrency);
  const commission = input.amount.isZero()
    ? new Decimal(0)
    : roundAmount(
        converted.times(input.terms.percent).dividedBy(100).plus(input.terms.fixed),
        input.settlementCurrency,
      );
  const settlement = input.direction === "payin" ? converted.minus(commission) : converted.plus(commission);
  return { converted, commission, settlement };
}
