import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Sql, withRetry } from "@gw/db";
import type { Logger } from "@gw/log";
import {
  CURRENCIES,
  type Currency,
  Decimal,
  FX_RATE_SCALE,
  formatAmount,
  isCurrency,
  isMethod,
  METHODS,
  quotedRate,
  settlementFigures,
} from "@gw/money";
import type {
  LedgerService,
  ListClearingByOperationRequest,
  ListPricingRequest,
  ListShopTotalsRequest,
  PostAdjustmentRequest,
  PutFxRateRequest,
  PutPricingRequest,
  QuoteRequest,
  QuoteResponseSchema,
  ReservePayoutRequest,
} from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { Code, failure } from "@gw/rpc";
import stringify from "safe-stable-stringify";
import { listClearingByOperation, listShopTotals } from "./audit.ts";
import { payoutPending } from "./events.ts";
import { invalid, isDirection, type Tier, validateTiers } from "./pricing.ts";
import { listPricing } from "./pricing-read.ts";
import { type AccountRef, credit, debit, postTransfer } from "./transfers.ts";

/** Positive decimal text for quoted amounts: up to 20 integer digits and 6 fraction digits. */
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

/** Prints a stored tier figure without exponent or trailing noise. */
const plain = (value: Decimal) => value.toFixed();

/**
 * The ledger's RPC surface: quotes, balances, and the admin writes (pricing, FX rates,
 * adjustments). Postings from operation events are made by the consumer (events.ts).
 */
export class LedgerHandlers implements ServiceImpl<typeof LedgerService> {
  readonly #sql: Sql;
  readonly #logger: Logger;

  constructor(sql: Sql, logger: Logger) {
    this.#sql = sql;
    this.#logger = logger;
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
    const shopId = requireText(req.shopId, "shop_id");
    if (!isMethod(req.method)) throw invalid("method", "method is not supported");
    if (!isDirection(req.direction)) throw invalid("direction", "direction must be payin or payout");
    const currency = requireCurrency(req.currency, "currency");
    if (METHODS[req.method].currency !== currency)
      throw invalid("currency", "currency does not match the method");
    const settlementCurrency = req.settlementCurrency
      ? requireCurrency(req.settlementCurrency, "settlement_currency")
      : currency;
    if (!AMOUNT.test(req.amount) || new Decimal(req.amount).isZero()) {
      throw invalid("amount", "amount must be a positive decimal string");
    }
    const amount = new Decimal(req.amount);

    const [tierRow] = await this.#sql<
      { min_amount: string; max_amount: string; percent: string; fixed: string }[]
    >`
      select min_amount, max_amount, percent, fixed from ledger.pricing_tiers
      where shop_id = ${shopId} and method = ${req.method} and direction = ${req.direction}
        and min_amount <= ${amount.toFixed()}::numeric and max_amount >= ${amount.toFixed()}::numeric
      limit 1`;
    if (!tierRow) {
      throw failure(
        Code.FailedPrecondition,
        "pricing_not_configured",
        "no pricing tier covers this amount",
        "amount",
      );
    }
    const tier: Tier = {
      minAmount: new Decimal(tierRow.min_amount),
      maxAmount: new Decimal(tierRow.max_amount),
      percent: new Decimal(tierRow.percent),
      fixed: new Decimal(tierRow.fixed),
    };

    let fx: { rate: Decimal; source: string } | undefined;
    if (settlementCurrency !== currency) {
      const [row] = await this.#sql<{ rate: string; source: string }[]>`
        select rate, source from ledger.fx_rates where from_currency = ${currency} and to_currency = ${settlementCurrency}`;
      if (!row) {
        throw failure(
          Code.FailedPrecondition,
          "fx_rate_missing",
          `no rate from ${currency} to ${settlementCurrency}`,
          "settlement_currency",
        );
      }
      // The operation shows and settles at this rate, six places (libs/money, FX_RATE_SCALE).
      fx = { rate: quotedRate(new Decimal(row.rate)), source: row.source };
    }
    const q = settlementFigures({
      amount,
      settlementCurrency,
      fxRate: fx?.rate,
      terms: { percent: tier.percent.toFixed(), fixed: tier.fixed.toFixed() },
      direction: req.direction,
    });
    return {
      commissionAmount: formatAmount(q.commission, settlementCurrency),
      settlementAmount: formatAmount(q.settlement, settlementCurrency),
      settlementCurrency,
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
        throw failure(
          Code.Internal,
          "ledger_inconsistent",
          "the accounting position is internally inconsistent",
        );
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
        await tx`delete from ledger.pricing_tiers where shop_id = ${shopId} and method = ${req.method}`;
        if (rows.length > 0) await tx`insert into ledger.pricing_tiers ${tx(rows)}`;
      }),
    );
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
    await this.#sql`
      insert into ledger.fx_rates (from_currency, to_currency, rate, source)
      values (${from}, ${to}, ${new Decimal(req.rate).toFixed()}::numeric, ${source})
      on conflict (from_currency, to_currency)
      do update set rate = excluded.rate, source = excluded.source, updated_at = now()`;
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
      throw failure(
        Code.FailedPrecondition,
        "idempotency_conflict",
        "adjustment_id was used with a different request",
        "adjustment_id",
      );
    }
    return { transferId: posted.id };
  }
}
