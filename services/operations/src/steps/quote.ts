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

/** The commission and FX figures of a quote, as the row stores them. */
export type StoredQuote = ReturnType<typeof storedQuote>;

/** The commission and FX figures of a quote, as the row stores them. */
export const storedQuote = (quote: Quoted) => ({
  settlement_currency: quote.settlementCurrency,
  fx_rate: quote.fxRate ?? null,
  fx_source: quote.fxSource ?? null,
  commission_percent: quote.tier?.percent ?? "0",
  commission_fixed: quote.tier?.fixed ?? "0",
  pricing_version: quote.pricingVersion,
});

/**
 * The commission and FX figures of a create priced from cached terms
 * (`Pricing.quoteIfCached`), as the row stores them; undefined when the terms are not
 * cached or refuse the amount (the create then prices on its read path, `quoteFor`).
 */
export async function cachedQuoteFor(
  deps: Pick<CreateDeps, "pricing">,
  input: CreateInput,
  settlementCurrency: string,
  /** A pricing round trip the create started after it began (`Pricing.barrier`). */
  barrier: Promise<void>,
): Promise<StoredQuote | undefined> {
  const quote = await deps.pricing
    ?.quoteIfCached(quoteInput(input, settlementCurrency), barrier)
    .catch(() => undefined);
  return quote && storedQuote(quote);
}

/** The commission and FX figures of a create, as the row stores them. */
export async function quoteFor(
  deps: CreateDeps,
  input: CreateInput,
  settlementCurrency: string,
  deadline: number,
  signal: AbortSignal,
  /** A pricing round trip the create started after it began (`Pricing.barrier`). */
  barrier?: Promise<void>,
) {
  const quote = await pricingOf(deps)
    .quote(
      quoteInput(input, settlementCurrency),
      { signal, timeoutMs: Math.max(1, deadline - Date.now()) },
      barrier,
    )
    .catch((err: unknown) => {
      throw passThrough(err);
    });
  return storedQuote(quote);
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
