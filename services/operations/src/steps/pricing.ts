import type { Client } from "@connectrpc/connect";
import { InvalidatedCache, type Nats, pricingInvalidationSubject } from "@gw/events";
import type { Logger } from "@gw/log";
import {
  type Currency,
  type Decimal,
  isCurrency,
  type PricingTerms,
  parseQuoteAmount,
  priceFromTerms,
} from "@gw/money";
import type { LedgerService, QuoteRequest } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { metricsRegistry } from "@gw/rpc";
import { Counter } from "prom-client";
import { PricingRefusedError } from "../domain/lifecycle/errors.ts";

const lookups = new Counter({
  name: "operations_pricing_cache_total",
  help: "Pricing terms lookups by outcome: hit (served from the cache after the NATS barrier), miss (read from the ledger), bypass (cache unusable: NATS down).",
  labelNames: ["outcome"],
  registers: [metricsRegistry],
});

/** What a quote is asked for: the ledger's QuoteRequest. */
export type QuoteInput = Pick<
  QuoteRequest,
  "shopId" | "method" | "direction" | "amount" | "currency" | "settlementCurrency"
>;

/** A quote as the ledger's Quote answers it, and the pricing version it was priced at (null: not known). */
export interface Quoted {
  commissionAmount: string;
  settlementAmount: string;
  settlementCurrency: string;
  fxRate?: string | undefined;
  fxSource?: string | undefined;
  tier?: { minAmount: string; maxAmount: string; percent: string; fixed: string } | undefined;
  pricingVersion: string | null;
}

interface CachedTerms {
  terms: PricingTerms;
  version: string;
}

type CallOptions = { signal?: AbortSignal; timeoutMs?: number };

/**
 * Quotes, computed here from the ledger's pricing terms (`GetPricingTerms`) with the
 * ledger's own function (`priceFromTerms`, libs/money), so a create costs no Quote call.
 * The terms are kept per (shop, method, direction, currency, settlement currency) in an
 * `InvalidatedCache`: the ledger publishes on `ledger-pricing.<prefix>` after every
 * committed pricing or rate write, and a cached entry is served only after a NATS round
 * trip, so the very next quote after an admin change prices with the new terms. While NATS
 * is disconnected every quote reads the terms from the ledger. Without a cache (tests,
 * tools) every quote is the ledger's Quote.
 *
 * Refusals are the ledger's: `validation_failed` from the terms read (or from Quote, for
 * an amount the local path does not take), `pricing_not_configured` and `fx_rate_missing`
 * built from the same `QuoteRefusal` the ledger answers with.
 */
export class Pricing {
  readonly #ledger: Client<typeof LedgerService>;
  readonly #cache: InvalidatedCache<CachedTerms> | undefined;

  constructor(ledger: Client<typeof LedgerService>, cache?: InvalidatedCache<CachedTerms>) {
    this.#ledger = ledger;
    this.#cache = cache;
  }

  /** A pricing whose terms are cached and invalidated over `nc` (call `start`, then `stop`). */
  static cached(ledger: Client<typeof LedgerService>, nc: Nats["nc"], prefix: string, logger: Logger) {
    return new Pricing(
      ledger,
      new InvalidatedCache<CachedTerms>(nc, {
        subject: pricingInvalidationSubject(prefix),
        logger,
        what: "pricing terms",
        onOutcome: (outcome) => lookups.inc({ outcome }),
      }),
    );
  }

  start(): Promise<void> {
    return this.#cache?.start() ?? Promise.resolve();
  }

  stop(): void {
    this.#cache?.stop();
  }

  /**
   * Starts the cache's NATS round trip now, for a quote that comes after other work (the
   * create's database read): pass it to `quote` and the two overlap.
   */
  barrier(): Promise<void> | undefined {
    return this.#cache?.barrier();
  }

  async quote(input: QuoteInput, options: CallOptions = {}, barrier?: Promise<void>): Promise<Quoted> {
    const amount = parseQuoteAmount(input.amount);
    if (this.#cache === undefined || amount === undefined || !isCurrency(input.currency)) {
      // The ledger's Quote: its answer, or its validation_failed for the amount.
      return { ...(await this.#ledger.quote(input, options)), pricingVersion: null };
    }
    const currency: Currency = input.currency;
    const cached = await this.#cache.get(
      termsKey(input),
      async () => {
        const read = await this.#ledger.getPricingTerms(
          {
            shopId: input.shopId,
            method: input.method,
            direction: input.direction,
            currency: input.currency,
            settlementCurrency: input.settlementCurrency,
          },
          options,
        );
        if (!isCurrency(read.settlementCurrency))
          throw new Error("ledger answered an unknown settlement currency");
        return {
          terms: {
            tiers: read.tiers.map((t) => ({
              minAmount: t.minAmount,
              maxAmount: t.maxAmount,
              percent: t.percent,
              fixed: t.fixed,
            })),
            currency,
            settlementCurrency: read.settlementCurrency,
            fx:
              read.fxRate !== undefined && !read.fxRateMissing
                ? { rate: read.fxRate, source: read.fxSource ?? "" }
                : undefined,
          },
          version: read.pricingVersion.toString(),
        };
      },
      barrier,
    );
    return priced(cached, amount, input.direction);
  }

  /**
   * The quote when its terms are cached (after the barrier, as `quote` serves them), else
   * undefined: it never asks the ledger, for a create that has not read its key yet (a
   * replay must not wait on the ledger). A refusal throws, as from `quote`.
   */
  async quoteIfCached(input: QuoteInput, barrier?: Promise<void>): Promise<Quoted | undefined> {
    const amount = parseQuoteAmount(input.amount);
    if (this.#cache === undefined || amount === undefined) return undefined;
    const found = await this.#cache.peek(termsKey(input), barrier);
    return found && priced(found.value, amount, input.direction);
  }
}

/** The cache key of a quote's terms. */
const termsKey = (input: QuoteInput) =>
  [input.shopId, input.method, input.direction, input.currency, input.settlementCurrency].join("\u0000");

/** A quote priced from cached terms, or the refusal they give (`PricingRefusedError`). */
function priced({ terms, version }: CachedTerms, amount: Decimal, direction: string): Quoted {
  const q = priceFromTerms(terms, amount, direction === "payout" ? "payout" : "payin");
  if ("refusal" in q) throw new PricingRefusedError(q.refusal, q.message, q.field);
  return { ...q, pricingVersion: version };
}
