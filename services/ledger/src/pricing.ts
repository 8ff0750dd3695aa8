import { Decimal } from "@gw/money";
import { invalid } from "./errors.ts";

/** A pricing tier as stored: amounts of the operation currency, fee in settlement currency. */
export interface Tier {
  minAmount: Decimal;
  maxAmount: Decimal;
  percent: Decimal;
  fixed: Decimal;
}

export interface TierText {
  minAmount: string;
  maxAmount: string;
  percent: string;
  fixed: string;
}

export const DIRECTIONS = ["payin", "payout"] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const isDirection = (value: string): value is Direction =>
  (DIRECTIONS as readonly string[]).includes(value);

/** Non-negative decimal text: up to 20 integer digits and 8 fraction digits, no sign or exponent. */
const NON_NEGATIVE = /^(0|[1-9]\d{0,19})(\.\d{1,8})?$/;

/** Parses non-negative decimal text, or undefined when it is not one. */
export function parseNonNegative(text: string): Decimal | undefined {
  return NON_NEGATIVE.test(text) ? new Decimal(text) : undefined;
}

/**
 * Validates one direction's tiers: decimal text, min <= max, percent within 0..100,
 * fixed >= 0, and closed ranges that do not overlap (so an amount picks at most one
 * tier). Returns the tiers parsed; throws `validation_failed` naming the field.
 */
export function validateTiers(direction: Direction, tiers: TierText[]): Tier[] {
  const parsed = tiers.map((t, i) => {
    const field = (name: string) => `${direction}[${i}].${name}`;
    const value = (name: string, text: string) => {
      const d = parseNonNegative(text);
      if (!d) throw invalid(field(name), `${field(name)} must be a non-negative decimal string`);
      return d;
    };
    const tier: Tier = {
      minAmount: value("min_amount", t.minAmount),
      maxAmount: value("max_amount", t.maxAmount),
      percent: value("percent", t.percent),
      fixed: value("fixed", t.fixed),
    };
    if (tier.minAmount.gt(tier.maxAmount))
      throw invalid(field("max_amount"), "max_amount is below min_amount");
    if (tier.percent.gt(100)) throw invalid(field("percent"), "percent must be between 0 and 100");
    return { tier, index: i };
  });
  const sorted = [...parsed].sort((a, b) => a.tier.minAmount.comparedTo(b.tier.minAmount));
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.tier.minAmount.lte(prev.tier.maxAmount)) {
      throw invalid(`${direction}[${cur.index}].min_amount`, `tier overlaps ${direction}[${prev.index}]`);
    }
  }
  return parsed.map((p) => p.tier);
}
