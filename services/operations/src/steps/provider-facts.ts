import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@gw/log";
import {
  type Currency,
  Decimal,
  formatAmount,
  isCurrency,
  isMethod,
  METHODS,
  settlementFigures,
} from "@gw/money";
import {
  type ProviderFact,
  ProviderFactEventSchema,
  ProviderFactSchema,
} from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { metricsRegistry } from "@gw/rpc";
import { Gauge } from "prom-client";
import { v7 as uuidv7 } from "uuid";
import type { ProviderLeg } from "../connectors/connector.ts";
import { DomainError, DomainErrorCode } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { Db as Tx } from "../repository/db.ts";
import type { OperationStore } from "../repository/operations.ts";
import { enqueueEvent } from "../repository/outbox.ts";
import type { FactFilter } from "../repository/provider-facts.ts";
import { type FactRow, insertFact, operationOfFact, providerMethods } from "../repository/provider-facts.ts";

/** Why a provider's report is a fact of its own rather than a change of the operation. */
export const FACT_KINDS = ["late_completion", "not_routed", "slot_refused", "amount_mismatch"] as const;
export type FactKind = (typeof FACT_KINDS)[number];

/**
 * How an operator settles a fact. Money that came in (payin): into the shop's balance, or
 * back to whoever paid it. Money that went out (payout): charged to the shop, or written
 * off as the gateway's loss.
 */
export const RESOLUTIONS = ["credit_shop", "return_to_payer", "debit_shop", "write_off"] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** The resolutions that fit each direction of money. */
const RESOLUTIONS_OF = {
  payin: ["credit_shop", "return_to_payer"],
  payout: ["debit_shop", "write_off"],
} as const satisfies Record<"payin" | "payout", readonly Resolution[]>;

/** The database the gauge below reads at scrape; set by `reportOpenProviderFacts` at start. */
let metricsStore: OperationStore | undefined;

/**
 * Open provider facts per kind: money an operator still has to place. The same
 * database-wide figure from every replica: take the max, not the sum.
 */
export const openProviderFacts = new Gauge({
  name: "operations_provider_facts_open",
  help: "Provider facts not yet resolved by an operator, per kind (database-wide; max over replicas).",
  labelNames: ["kind"],
  registers: [metricsRegistry],
  async collect() {
    if (metricsStore === undefined) return;
    const rows = await metricsStore.facts.countOpen().catch(() => undefined);
    if (rows === undefined) return;
    for (const kind of FACT_KINDS) this.set({ kind }, rows.find((r) => r.kind === kind)?.n ?? 0);
  },
});

/** Lets the `operations_provider_facts_open` gauge read this database at scrape. */
export function reportOpenProviderFacts(store: OperationStore): void {
  metricsStore = store;
}

/** The fact does not exist. */
export class ProviderFactNotFoundError extends DomainError {
  readonly code = DomainErrorCode.ProviderFactNotFound;
}

/** The fact was resolved before with another action; a fact is resolved once. */
export class ProviderFactAlreadyResolvedError extends DomainError {
  readonly code = DomainErrorCode.ProviderFactAlreadyResolved;
}

/**
 * The action does not fit the fact: the gateway knows no operation (hence no shop or
 * pricing) to credit or charge, or the action is for money moving the other way
 * (`credit_shop`/`return_to_payer` settle money that came in, `debit_shop`/`write_off`
 * money that went out).
 */
export class ProviderFactNotCreditableError extends DomainError {
  readonly code = DomainErrorCode.ProviderFactNotCreditable;
}

/** What a provider reported that the gateway did not expect. */
export interface FactInput {
  provider: string;
  /** The provider's reference: our operation id. */
  reference: string;
  /** The operation under that reference, when we hold one. */
  operation: OperationRow | undefined;
  kind: FactKind;
  providerStatus: "completed";
  /** The legs reported; they name the fact and, without `amount`, say how much moved. */
  legs: ProviderLeg[];
  /**
   * How much moved when the legs do not say it: a completion without decomposition, a
   * receipt, or only the part of the legs beyond what an operation already settled.
   */
  amount?: Decimal;
  /** Names the report when no legs do (a receipt id, a slot confirmation). */
  sourceKey?: string;
  /**
   * Which way the money moved, when not the operation's own: a pool payin's money that no
   * payout took went out to that payout's recipient (`payout`).
   */
  direction?: "payin" | "payout";
}

const iso = (t: string | Date) => new Date(t).toISOString();

/** The wire form of a fact row (admin reads and events). */
function toFact(row: FactRow): ProviderFact {
  return create(ProviderFactSchema, {
    id: row.id,
    operationId: row.operation_id ?? undefined,
    shopId: row.shop_id ?? undefined,
    provider: row.provider,
    kind: row.kind,
    providerStatus: row.provider_status,
    direction: row.direction,
    // Empty when unknown (see the table's comment).
    amount: row.amount === null ? "" : new Decimal(row.amount).toFixed(2),
    currency: row.currency ?? "",
    status: row.status,
    createdAt: iso(row.created_at),
    resolution:
      row.resolution === null
        ? undefined
        : {
            action: row.resolution,
            reason: row.resolution_reason ?? "",
            operator: row.resolved_by ?? "",
            resolvedAt: row.resolved_at ? iso(row.resolved_at) : "",
            settlementAmount: row.settlement_amount ?? undefined,
            commissionAmount: row.commission_amount ?? undefined,
            settlementCurrency: row.settlement_currency ?? undefined,
          },
  });
}

/** Queues the fact's event in the caller's transaction (the outbox relay publishes it after commit). */
async function enqueue(tx: Tx, prefix: string, type: "recorded" | "resolved", row: FactRow): Promise<void> {
  const id = uuidv7();
  const payload = toBinary(
    ProviderFactEventSchema,
    create(ProviderFactEventSchema, {
      eventId: id,
      type,
      occurredAt: new Date().toISOString(),
      fact: toFact(row),
    }),
  );
  await enqueueEvent(tx, id, `${prefix}.provider_facts.${type}`, payload);
}

/**
 * Records what a provider reported that the gateway did not expect, inside `tx`, with its
 * `provider_facts.recorded` event: the money moved, so the ledger books it on suspense and
 * an operator decides where it goes. The operation is not touched (a terminal status stays
 * terminal). Idempotent per provider, reference and the legs (or source) it came from: a
 * replayed callback or the same result read again records nothing more. Returns whether a
 * new fact was recorded.
 */
export async function recordProviderFact(
  deps: { store: { prefix: string }; logger: Logger },
  tx: Tx,
  input: FactInput,
): Promise<boolean> {
  const op = input.operation;
  const fromLegs = input.legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  const reported =
    input.amount ?? (input.legs.length > 0 ? fromLegs : new Decimal(op?.expected_amount ?? "NaN"));
  const factKey =
    input.sourceKey ??
    (input.legs.length > 0
      ? `legs:${input.legs
          .map((l) => l.id)
          .sort()
          .join(",")}`
      : `${input.providerStatus}:no_legs`);
  const currency = op?.currency ?? (await providerCurrency(tx, input.provider));
  // Nothing is dropped: a fact whose amount or currency is unknown is still recorded and
  // listed for an operator (who asks the provider); the ledger books only what is known.
  const amount = reported.isFinite() && reported.gt(0) ? reported : undefined;
  if (amount === undefined || currency === undefined)
    deps.logger.error(
      { provider: input.provider, reference: input.reference, kind: input.kind, legs: input.legs.length },
      "provider fact without a known amount or currency: recorded for an operator, not booked",
    );
  const row = await insertFact(tx, {
    id: randomUUID(),
    provider: input.provider,
    reference: input.reference,
    fact_key: factKey,
    operation_id: op?.id ?? null,
    shop_id: op?.shop_id ?? null,
    merchant_id: op?.merchant_id ?? null,
    kind: input.kind,
    provider_status: input.providerStatus,
    direction: input.direction ?? (op?.type === "payout" ? "payout" : "payin"),
    amount: amount === undefined ? null : amount.toFixed(2),
    currency: currency ?? null,
  });
  if (!row) return false;
  await enqueue(tx, deps.store.prefix, "recorded", row);
  deps.logger.error(
    {
      factId: row.id,
      kind: row.kind,
      provider: row.provider,
      operationId: row.operation_id,
      amount: row.amount,
      currency: row.currency,
    },
    "provider fact recorded: money moved that the gateway did not expect; booked on suspense for an operator",
  );
  return true;
}

/** The operator's review queue: open facts first, then the newest. */
export async function listProviderFacts(store: OperationStore, options: FactFilter): Promise<ProviderFact[]> {
  return (await store.facts.list(options)).map(toFact);
}

/**
 * Resolves an open fact once, under its row lock, with its `provider_facts.resolved`
 * event in the same transaction. Money that came in: `credit_shop` moves it from suspense
 * to the shop's balance less the commission the operation's pricing takes from a payment
 * of that amount (at the operation's FX rate; the commission never exceeds the amount),
 * `return_to_payer` from suspense to the liability of returning it. Money that went out:
 * `debit_shop` charges the shop's balance with it plus the commission as for a payout of
 * that amount, `write_off` books it as the gateway's loss. The same action again answers
 * the recorded resolution (`replayed`); another one is refused.
 *
 * @throws ProviderFactNotFoundError, ProviderFactAlreadyResolvedError, ProviderFactNotCreditableError
 */
export async function resolveProviderFact(
  deps: { store: OperationStore; logger: Logger },
  input: { id: string; action: Resolution; reason: string; operator: string },
): Promise<{ fact: ProviderFact; replayed: boolean }> {
  return deps.store.transaction(async (tx) => {
    const fact = await deps.store.facts.lock(tx, input.id);
    if (!fact) throw new ProviderFactNotFoundError("provider fact not found");
    if (fact.status === "resolved") {
      if (fact.resolution !== input.action)
        throw new ProviderFactAlreadyResolvedError(`already resolved: ${fact.resolution}`);
      return { fact: toFact(fact), replayed: true };
    }
    const direction = fact.direction === "payout" ? "payout" : "payin";
    if (!(RESOLUTIONS_OF[direction] as readonly Resolution[]).includes(input.action))
      throw new ProviderFactNotCreditableError(
        `a ${direction} fact is settled with ${RESOLUTIONS_OF[direction].join(" or ")}`,
      );
    const figures =
      input.action === "credit_shop" || input.action === "debit_shop"
        ? await shopFigures(tx, fact, direction)
        : undefined;
    const resolved = await deps.store.facts.markResolved(tx, fact.id, {
      action: input.action,
      operator: input.operator,
      reason: input.reason,
      figures,
    });
    if (!resolved) throw new Error(`provider fact ${fact.id} vanished under its lock`);
    await enqueue(tx, deps.store.prefix, "resolved", resolved);
    deps.logger.info(
      { factId: fact.id, action: input.action, operator: input.operator },
      "provider fact resolved",
    );
    return { fact: toFact(resolved), replayed: false };
  });
}

/**
 * The currency of a provider's money when no operation says it: the one currency of the
 * methods the provider is configured for; undefined when it has none, several, or no
 * configuration at all (never a guessed default).
 */
async function providerCurrency(tx: Tx, provider: string): Promise<Currency | undefined> {
  const methods = await providerMethods(tx, provider);
  const currencies = new Set((methods ?? []).map((m) => (isMethod(m) ? METHODS[m].currency : undefined)));
  const [only] = currencies;
  return currencies.size === 1 ? only : undefined;
}

/**
 * What crediting (payin) or charging (payout) the shop with a fact comes to, in its
 * settlement currency at the operation's FX rate and with the commission its pricing
 * takes: a payin's commission never exceeds what arrived; a payout's is added to what
 * went out, as a payout is charged.
 *
 * @throws ProviderFactNotCreditableError when no operation or pricing is known
 */
async function shopFigures(
  tx: Tx,
  fact: FactRow,
  direction: "payin" | "payout",
): Promise<{ settlement: string; commission: string; currency: string }> {
  if (fact.amount === null || fact.currency === null)
    throw new ProviderFactNotCreditableError(
      "the amount or currency of this fact is unknown: ask the provider, then settle it outside the shop's balance",
    );
  const op = fact.operation_id ? await operationOfFact(tx, fact.operation_id) : undefined;
  const settlementCurrency = op?.settlement_currency;
  if (!op || !settlementCurrency || !isCurrency(settlementCurrency) || op.commission_percent === null)
    throw new ProviderFactNotCreditableError(
      direction === "payin"
        ? "no shop pricing is known for this fact: return it instead"
        : "no shop pricing is known for this fact: write it off instead",
    );
  const f = settlementFigures({
    amount: new Decimal(fact.amount),
    settlementCurrency,
    fxRate: op.fx_rate === null ? undefined : new Decimal(op.fx_rate),
    terms: { percent: op.commission_percent, fixed: op.commission_fixed ?? "0" },
    direction,
  });
  return {
    settlement: formatAmount(f.settlement, settlementCurrency),
    commission: formatAmount(f.commission, settlementCurrency),
    currency: settlementCurrency,
  };
}

/** The pool's provider name. */
const POOL = SELF_MATCHING;

/**
 * A receipt proved a payment the gateway had already cancelled, rejected or expired. A
 * provider's payin: a late completion. A pool payin: its money went to a payout's
 * recipient after its slot was released, so no payout accounts for it (`slot_refused`).
 */
export function recordReceiptFact(
  deps: { store: { prefix: string }; logger: Logger },
  tx: Tx,
  row: OperationRow,
  review: { receiptId: string; actualAmount?: string | undefined },
): Promise<boolean> {
  const pooled = row.provider === POOL;
  return recordProviderFact(deps, tx, {
    provider: row.provider ?? POOL,
    reference: row.id,
    operation: row,
    kind: pooled ? "slot_refused" : "late_completion",
    providerStatus: "completed",
    legs: [],
    amount: new Decimal(review.actualAmount ?? row.expected_amount ?? "0"),
    sourceKey: `receipt:${review.receiptId}`,
    direction: pooled ? "payout" : "payin",
  });
}

/**
 * A completed pool payin whose slot its payout could no longer take (released first) or
 * took only in part (an overpayment: `amount` is the excess over the slot): the payer's
 * money reached the payout's recipient and no payout accounts for it, so it is booked as
 * money gone out (`payout` direction).
 */
export function recordSlotRefused(
  deps: { store: { prefix: string }; logger: Logger },
  tx: Tx,
  row: OperationRow,
  code: string,
  amount: Decimal = new Decimal(row.actual_amount),
): Promise<boolean> {
  return recordProviderFact(deps, tx, {
    provider: POOL,
    reference: row.id,
    operation: row,
    kind: "slot_refused",
    providerStatus: "completed",
    legs: [],
    amount,
    sourceKey: `slot:${code}`,
    direction: "payout",
  });
}
