import type { CreateInput } from "../domain/create-request.ts";
import { ledgerRefusal } from "../domain/dependency-errors.ts";
import { DependencyUnavailableError, PricingRefusedError } from "../domain/lifecycle/errors.ts";
import type { CreateDeps } from "./create-deps.ts";
import { Pricing, type Quoted, type QuoteInput } from "./pricing.ts";

/** A create's quote: from cached pricing terms, or the ledger's Quote. */

/** The deps' pricing: the cached one, or the ledger's Quote. */
export const pricingOf = (deps: Pick<CreateDeps, "ledger" | "pricing">) =>
  deps.pricing ?? new Pricing(deps.ledger);

/** What a create's quote is asked for. */
export const quoteInput = (input: CreateInput, settlementCurrency: string): QuoteInput => ({
  shopId: input.shopId,
  method: input.method,
  direction: input.type === "payment" ? "payin" : "payout",
  amount: input.amount,
  currency: input.currency,
  settlementCurrency,
});

/** The commission and FX figures of a create, as the row stores them. */
export interface StoredQuote {
  settlement_currency: string;
  fx_rate: string | null;
  fx_source: string | null;
  commission_percent: string;
  commission_fixed: string;
  pricing_version: string | null;
}

/** How a create is priced: from cached terms only, or by whatever answers (the ledger's Quote if need be). */
export type QuoteHow =
  /** After this round trip (`Pricing.barrier`), from cached terms only (`Pricing.quoteIfCached`). */
  | { cachedAfter: Promise<void> }
  | {
      deadline: number;
      signal: AbortSignal;
      /** A pricing round trip the create started after it began (`Pricing.barrier`). */
      barrier?: Promise<void>;
    };

/**
 * The commission and FX figures of a create, as the row stores them. From cached terms
 * only (`cachedAfter`): undefined when the terms are not cached or refuse the amount (the
 * create then prices on its read path). Otherwise the cached terms or the ledger's Quote,
 * whose failure is translated (`passThrough`).
 */
export async function quoteFor(
  deps: Pick<CreateDeps, "ledger" | "pricing">,
  input: CreateInput,
  settlementCurrency: string,
  how: { cachedAfter: Promise<void> },
): Promise<StoredQuote | undefined>;
export async function quoteFor(
  deps: Pick<CreateDeps, "ledger" | "pricing">,
  input: CreateInput,
  settlementCurrency: string,
  how: Exclude<QuoteHow, { cachedAfter: Promise<void> }>,
): Promise<StoredQuote>;
export async function quoteFor(
  deps: Pick<CreateDeps, "ledger" | "pricing">,
  input: CreateInput,
  settlementCurrency: string,
  how: QuoteHow,
): Promise<StoredQuote | undefined> {
  const asked = quoteInput(input, settlementCurrency);
  const quote: Quoted | undefined =
    "cachedAfter" in how
      ? await deps.pricing?.quoteIfCached(asked, how.cachedAfter).catch(() => undefined)
      : await pricingOf(deps)
          .quote(
            asked,
            { signal: how.signal, timeoutMs: Math.max(1, how.deadline - Date.now()) },
            how.barrier,
          )
          .catch((err: unknown) => {
            throw passThrough(err);
          });
  return (
    quote && {
      settlement_currency: quote.settlementCurrency,
      fx_rate: quote.fxRate ?? null,
      fx_source: quote.fxSource ?? null,
      commission_percent: quote.tier?.percent ?? "0",
      commission_fixed: quote.tier?.fixed ?? "0",
      pricing_version: quote.pricingVersion,
    }
  );
}

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
