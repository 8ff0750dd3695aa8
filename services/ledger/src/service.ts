import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Sql, withRetry } from "@gw/db";
import type { Logger } from "@gw/log";
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
  quotedRate,
} from "@gw/money";
import type {
  GetPricingTermsRequest,
  GetPricingTermsResponseSchema,
  LedgerService,
  ListClearingByOperationRequest,
  ListPricingRequest,
  ListShopTotalsRequest,
  PostAdjustmentRequest,
  PutFxRateRequest,
  PutPricingRequest,
  QuoteRequest,
  QuoteResponseSchema,
  ReleaseRefusedPayoutRequest,
  ReservePayoutRequest,
} from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type postgres from "postgres";
import stringify from "safe-stable-stringify";
import { listClearingByOperation, listShopTotals } from "./audit.ts";
import { adjustmentConflict, invalid, ledgerInconsistent, pricingRefused } from "./errors.ts";
import { payoutPending, payoutRefused } from "./events.ts";
import { isDirection, validateTiers } from "./pricing.ts";
import { listPricing } from "./pricing-read.ts";
import { type AccountRef, credit, debit, postTransfer } from "./transfers.ts";

/** Positive decimal text for reserved amounts: up to 20 integer digits and 6 fraction digits. */
const AMOUNT = /^(0|[1-9]\d{0,19})(\.\d{1,6})?$/;
/** Signed decimal text for adjustments; the currency's scale is checked separately. */
const SIGNED_AMOUNT = /^-?(0|[1-9]\d{0,19})(\.\d{1,6})?$/;
/** Positive rate text: up to 12 fraction digits. */
const RATE = /^(0|[1-9]\d{0,19})(\.\d{1,12})?$/;
const MAX_TEXT = 256;

function requireText(value: string, field: string, max = MAX_TEXT): string {
  if (value.length === 0) throw invalid(field, `${field} is required`);
  if (value.length > max) throw invalid(field, `${field} is longer than ${max} characters`);
  return value;
}

function requireCurrency(value: string, field: string): Currency {
  if (!isCurrency(value)) throw invalid(field, `${field} is not a supported currency`);
  return value;
}

/** One row of GetBalances, as the wire carries it. */
export interface BalanceRow {
  currency: Currency;
  balance: string;
  reserved: string;
  currentMinus: string;
}

/** A quote's or a terms read's key, validated: INVALID_ARGUMENT (validation_failed) naming the field. */
function termsKey(req: {
  shopId: string;
  method: string;
  direction: string;
  currency: string;
  settlementCurrency: string;
}) {
  const shopId = requireText(req.shopId, "shop_id");
  if (!isMethod(req.method)) throw invalid("method", "method is not supported");
  if (!isDirection(req.direction)) throw invalid("direction", "direction must be payin or payout");
  const currency = requireCurrency(req.currency, "currency");
  if (METHODS[req.method].currency !== currency)
    throw invalid("currency", "currency does not match the method");
  const settlementCurrency = req.settlementCurrency
    ? requireCurrency(req.settlementCurrency, "settlement_currency")
    : currency;
  return { shopId, method: req.method, direction: req.direction, currency, settlementCurrency };
}

/**
 * The tiers of one shop, method and direction, the rate when the currencies differ, and
 * the pricing version, in one statement (one snapshot: a write raises the version in its
 * own transaction, so the version names exactly these terms).
 */
async function readPricingTerms(
  sql: Sql,
  key: ReturnType<typeof termsKey>,
): Promise<{ terms: PricingTerms; version: string }> {
  const differs = key.settlementCurrency !== key.currency;
  const [row] = await sql<
    {
      version: string;
      tiers: { minAmount: string; maxAmount: string; percent: string; fixed: string }[];
      rate: string | null;
      source: string | null;
    }[]
  >`
    select
      coalesce((select version from ledger.pricing_version where id = 1), 0)::text as version,
      coalesce((select json_agg(json_build_object(
                  'minAmount', min_amount::text, 'maxAmount', max_amount::text,
                  'percent', percent::text, 'fixed', fixed::text) order by min_amount)
                from ledger.pricing_tiers
               where shop_id = ${key.shopId} and method = ${key.method} and direction = ${key.direction}),
               '[]'::json) as tiers,
      r.rate::text as rate, r.source
    from (select 1) one
    left join ledger.fx_rates r
      on ${differs} and r.from_currency = ${key.currency} and r.to_currency = ${key.settlementCurrency}`;
  if (!row) throw new Error("pricing terms read returned no row");
  return {
    terms: {
      tiers: row.tiers.map((t) => ({
        minAmount: plain(t.minAmount),
        maxAmount: plain(t.maxAmount),
        percent: plain(t.percent),
        fixed: plain(t.fixed),
      })),
      currency: key.currency,
      settlementCurrency: key.settlementCurrency,
      fx: row.rate !== null && row.source !== null ? { rate: row.rate, source: row.source } : undefined,
    },
    version: row.version,
  };
}

/** Raises the pricing version; call it in the transaction of every pricing-tier or FX-rate write. */
async function raisePricingVersion(tx: postgres.TransactionSql) {
  await tx`
    insert into ledger.pricing_version (id, version) values (1, 1)
    on conflict (id) do update set version = ledger.pricing_version.version + 1`;
}

/** Prints a stored tier figure without exponent or trailing noise. */
const plain = (value: string) => new Decimal(value).toFixed();

/**
 * The ledger's RPC surface: quotes, balances, and the admin writes (pricing, FX rates,
 * adjustments). Postings from operation events are made by the consumer (events.ts).
 */
export class LedgerHandlers implements ServiceImpl<typeof LedgerService> {
  readonly #sql: Sql;
  readonly #logger: Logger;
  readonly #invalidate: () => Promise<void>;

  /**
   * `invalidate`: tells the pricing caches (operations') that pricing changed, resolving
   * once NATS has the message; called after every committed pricing or rate write.
   */
  constructor(sql: Sql, logger: Logger, invalidate: () => Promise<void> = async () => {}) {
    this.#sql = sql;
    this.#logger = logger;
    this.#invalidate = invalidate;
  }

  /** Admin audit: provider clearing per operation and currency. Errors: INVALID_ARGUMENT (cursor). */
  listClearingByOperation(req: ListClearingByOperationRequest) {
    return listClearingByOperation(this.#sql, req);
  }

  /** Admin audit: provider clearing and the accounts' sum per shop and currency. Errors: INVALID_ARGUMENT (cursor). */
  listShopTotals(req: ListShopTotalsRequest) {
    return listShopTotals(this.#sql, req);
  }

  /**
   * Prices an operation from the shop's tier for method and direction.
   * Errors: INVALID_ARGUMENT (validation_failed), FAILED_PRECONDITION
   * (pricing_not_configured, fx_rate_missing).
   */
  async quote(req: QuoteRequest): Promise<MessageInitShape<typeof QuoteResponseSchema>> {
    const key = termsKey(req);
    const amount = parseQuoteAmount(req.amount);
    if (!amount) throw invalid("amount", "amount must be a positive decimal string");
    const { terms } = await readPricingTerms(this.#sql, key);
    const q = priceFromTerms(terms, amount, key.direction);
    if ("refusal" in q) throw pricingRefused(q);
    return q;
  }

  /**
   * What a quote depends on, read at one point in time with the pricing version, for a
   * caller that prices locally (operations' pricing cache). Errors: INVALID_ARGUMENT
   * (validation_failed).
   */
  async getPricingTerms(
    req: GetPricingTermsRequest,
  ): Promise<MessageInitShape<typeof GetPricingTermsResponseSchema>> {
    const { terms, version } = await readPricingTerms(this.#sql, termsKey(req));
    return {
      tiers: terms.tiers,
      settlementCurrency: terms.settlementCurrency,
      fxRate: terms.fx?.rate,
      fxSource: terms.fx?.source,
      fxRateMissing: terms.settlementCurrency !== terms.currency && terms.fx === undefined,
      pricingVersion: BigInt(version),
    };
  }

  /**
   * One row per supported currency, zeros included, read at one point in time. Each
   * row's stored balances are checked against the sum of their postings; any mismatch
   * fails the whole call. Errors: INTERNAL (ledger_inconsistent).
   */
  async getBalances(req: { shopId: string }): Promise<{ balances: BalanceRow[] }> {
    const shopId = requireText(req.shopId, "shop_id");
    // One statement sees one snapshot, so the stored balances and the posting sums agree in time.
    const rows = await this.#sql<
      { id: string; currency: string; kind: string; balance: string; posted: string }[]
    >`
      select a.id, a.currency, a.kind, a.balance::text as balance,
        coalesce((select sum(case when p.side = 'credit' then p.amount else -p.amount end)
                  from ledger.postings p where p.account_id = a.id), 0)::text as posted
      from ledger.accounts a
      where a.owner = ${shopId} and a.kind in ('available', 'reserved')`;
    const byKey = new Map<string, Decimal>();
    for (const row of rows) {
      if (!new Decimal(row.balance).eq(new Decimal(row.posted))) {
        this.#logger.error(
          { accountId: row.id, shopId, balance: row.balance, posted: row.posted },
          "account balance differs from its postings",
        );
        throw ledgerInconsistent();
      }
      byKey.set(`${row.currency}:${row.kind}`, new Decimal(row.balance));
    }
    const zero = new Decimal(0);
    return {
      balances: (Object.keys(CURRENCIES) as Currency[]).map((currency) => {
        const balance = byKey.get(`${currency}:available`) ?? zero;
        const reserved = byKey.get(`${currency}:reserved`) ?? zero;
        const minus = Decimal.max(balance.plus(reserved).neg(), zero);
        return {
          currency,
          balance: formatAmount(balance, currency),
          reserved: formatAmount(reserved, currency),
          currentMinus: formatAmount(minus, currency),
        };
      }),
    };
  }

  /**
   * Replaces every tier of one shop and method, both directions, atomically.
   * Errors: INVALID_ARGUMENT (validation_failed, naming the field).
   */
  async putPricing(req: PutPricingRequest) {
    const shopId = requireText(req.shopId, "shop_id");
    if (!isMethod(req.method)) throw invalid("method", "method is not supported");
    const payin = validateTiers("payin", req.payin);
    const payout = validateTiers("payout", req.payout);
    const rows = [
      ...payin.map((t) => ({ direction: "payin", t })),
      ...payout.map((t) => ({ direction: "payout", t })),
    ].map(({ direction, t }) => ({
      shop_id: shopId,
      method: req.method,
      direction,
      min_amount: t.minAmount.toFixed(),
      max_amount: t.maxAmount.toFixed(),
      percent: t.percent.toFixed(),
      fixed: t.fixed.toFixed(),
    }));
    await withRetry(() =>
      this.#sql.begin(async (tx) => {
        // First: the version row's lock orders concurrent pricing writes, so the delete of
        // the second sees the tiers of the first (two at once left both sets, overlapping).
        await raisePricingVersion(tx);
        await tx`delete from ledger.pricing_tiers where shop_id = ${shopId} and method = ${req.method}`;
        if (rows.length > 0) await tx`insert into ledger.pricing_tiers ${tx(rows)}`;
      }),
    );
    await this.#invalidate();
    return {};
  }

  /** A shop's pricing per method (pricing-read.ts). */
  listPricing(req: ListPricingRequest) {
    return listPricing(this.#sql, req);
  }

  /** Sets the rate from one currency to another. Errors: INVALID_ARGUMENT (validation_failed). */
  async putFxRate(req: PutFxRateRequest) {
    const from = requireCurrency(req.from, "from");
    const to = requireCurrency(req.to, "to");
    if (from === to) throw invalid("to", "to must differ from from");
    if (!RATE.test(req.rate) || quotedRate(new Decimal(req.rate)).isZero()) {
      throw invalid(
        "rate",
        "rate must be a positive decimal string, at least 0.000001 (quotes use six places)",
      );
    }
    const source = requireText(req.source || "manual", "source");
    await withRetry(() =>
      this.#sql.begin(async (tx) => {
        await raisePricingVersion(tx);
        await tx`
          insert into ledger.fx_rates (from_currency, to_currency, rate, source)
          values (${from}, ${to}, ${new Decimal(req.rate).toFixed()}::numeric, ${source})
          on conflict (from_currency, to_currency)
          do update set rate = excluded.rate, source = excluded.source, updated_at = now()`;
      }),
    );
    await this.#invalidate();
    return {};
  }

  /**
   * Reserves a payout's total before its create asks any provider (`payoutPending`, the
   * same posting as the payout.pending event's, once per operation and routing).
   * Errors: INVALID_ARGUMENT (validation_failed).
   */
  async reservePayout(req: ReservePayoutRequest) {
    const shopId = requireText(req.shopId, "shop_id");
    const operationId = requireText(req.operationId, "operation_id");
    const settlementCurrency = requireCurrency(req.settlementCurrency, "settlement_currency");
    if (!AMOUNT.test(req.settlementAmount)) {
      throw invalid("settlement_amount", "settlement_amount must be a positive decimal string");
    }
    const settlement = new Decimal(req.settlementAmount);
    return withRetry(() =>
      this.#sql.begin((tx) =>
        payoutPending(tx, {
          operationId,
          shopId,
          settlementCurrency,
          settlement,
          generation: req.operationVersion,
        }),
      ),
    );
  }

  /**
   * Releases a refused payout create's reserve before operations answers the refusal: the
   * `payout.refused` event's own posting (`payoutRefused`), so the event, delivered later
   * as the durable fallback, finds it done and posts nothing.
   */
  async releaseRefusedPayout(req: ReleaseRefusedPayoutRequest) {
    const shopId = requireText(req.shopId, "shop_id");
    const operationId = requireText(req.operationId, "operation_id");
    if (req.operationVersion <= 0n) throw invalid("operation_version", "operation_version must be positive");
    await withRetry(() =>
      this.#sql.begin((tx) => payoutRefused(tx, { operationId, shopId }, req.operationVersion)),
    );
    return {};
  }

  /**
   * Credits (positive amount) or debits (negative) a shop's available balance against
   * the adjustments account, once per adjustment_id. A replay with the same request
   * returns the first transfer; a different request under the same id is refused.
   * Errors: INVALID_ARGUMENT (validation_failed), FAILED_PRECONDITION (idempotency_conflict).
   */
  async postAdjustment(req: PostAdjustmentRequest) {
    const shopId = requireText(req.shopId, "shop_id");
    const currency = requireCurrency(req.currency, "currency");
    const adjustmentId = requireText(req.adjustmentId, "adjustment_id");
    const reason = requireText(req.reason, "reason", 2048);
    if (!SIGNED_AMOUNT.test(req.amount)) throw invalid("amount", "amount must be a decimal string");
    const amount = new Decimal(req.amount);
    if (amount.isZero()) throw invalid("amount", "amount must not be zero");
    if (amount.decimalPlaces() > CURRENCIES[currency].scale) {
      throw invalid("amount", `amount has more than ${CURRENCIES[currency].scale} decimal places`);
    }
    const requestHash = createHash("sha256")
      .update(stringify({ shopId, currency, amount: amount.toFixed(), reason }) ?? "")
      .digest("hex");
    const available: AccountRef = { owner: shopId, currency, kind: "available" };
    const adjustments: AccountRef = { owner: shopId, currency, kind: "adjustments" };
    const magnitude = amount.abs();
    const posted = await withRetry(() =>
      this.#sql.begin((tx) =>
        postTransfer(tx, {
          key: `adj:${adjustmentId}`,
          kind: "adjustment",
          shopId,
          requestHash,
          metadata: { reason },
          postings: amount.isPos()
            ? [debit(adjustments, magnitude), credit(available, magnitude)]
            : [debit(available, magnitude), credit(adjustments, magnitude)],
        }),
      ),
    );
    if (posted.requestHash !== requestHash) {
      throw adjustmentConflict();
    }
    return { transferId: posted.id };
  }
}
