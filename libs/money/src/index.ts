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
