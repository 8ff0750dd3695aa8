import { fromBinary } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import {
  CONSUMER_SUBJECTS,
  type EventApplier,
  type Nats,
  type RetryPolicy,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import type { Logger } from "@gw/log";
import { type Currency, Decimal, isCurrency } from "@gw/money";
import {
  type ProviderFact,
  type ProviderFactEvent,
  ProviderFactEventSchema,
} from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import type postgres from "postgres";
import { InvalidEventError } from "./events.ts";
import { type AccountKind, type AccountRef, credit, debit, type Posting, postTransfer } from "./transfers.ts";

/** The durable consumer of provider facts; also the key of its rows in the ledger's inbox. */
export const SUSPENSE_CONSUMER = "ledger-provider-facts";

/** The figures of a fact the ledger books from, read and checked once. */
interface FactFigures {
  id: string;
  /** The shop when the gateway knows one; otherwise the provider stands in as owner. */
  owner: string;
  currency: Currency;
  amount: Decimal;
  direction: "payin" | "payout";
}

function figures(fact: ProviderFact | undefined): FactFigures {
  if (!fact?.id) throw new InvalidEventError("provider fact event carries no fact");
  if (!isCurrency(fact.currency)) throw new InvalidEventError(`provider fact ${fact.id}: unknown currency`);
  if (!/^\d+(\.\d+)?$/.test(fact.amount)) throw new InvalidEventError(`provider fact ${fact.id}: bad amount`);
  const amount = new Decimal(fact.amount);
  if (amount.lte(0)) throw new InvalidEventError(`provider fact ${fact.id}: amount must be positive`);
  return {
    id: fact.id,
    owner: fact.shopId || `provider:${fact.provider}`,
    currency: fact.currency,
    amount,
    direction: fact.direction === "payout" ? "payout" : "payin",
  };
}

const account = (owner: string, currency: Currency, kind: AccountKind): AccountRef => ({
  owner,
  currency,
  kind,
});

/**
 * Books a provider fact (operations' `provider_facts.*` events) inside the consumer's
 * transaction, so the books match what the providers did even while nobody has decided
 * what the money is for:
 * - `recorded`: money received by a provider (payin) sits in `suspense`, against
 *   `provider_clearing` as a payment's does; money a provider paid out (payout) is owed
 *   to suspense the other way round.
 * - `resolved` with `credit_shop`: out of suspense into the shop's `available` and
 *   `commission_revenue`, converted at the figures operations computed (`fx_conversion`
 *   of each currency takes its side, as for a payment);
 * - `resolved` with `return_to_payer`: out of suspense into `payer_returns`, the
 *   liability of sending it back;
 * - `resolved` with `debit_shop` (money paid out): the shop's `available` pays suspense
 *   back plus `commission_revenue`, as a payout costs it;
 * - `resolved` with `write_off` (money paid out): the gateway bears it, on `losses`.
 * Each booking is one transfer with a key per fact and step, so a redelivery posts nothing.
 */
export async function applyProviderFactEvent(
  tx: postgres.TransactionSql,
  event: ProviderFactEvent,
): Promise<void> {
  // A fact whose amount or currency the provider did not say is on the operator's list in
  // operations; nothing is known to book, for its recording or its resolution.
  if (event.fact && (event.fact.amount === "" || event.fact.currency === "")) return;
  const f = figures(event.fact);
  const suspense = account(f.owner, f.currency, "suspense");
  const clearing = account(f.owner, f.currency, "provider_clearing");
  if (event.type === "recorded") {
    await postTransfer(tx, {
      key: `fact:${f.id}:recorded`,
      kind: "provider_fact_suspense",
      shopId: f.owner,
      operationId: event.fact?.operationId,
      postings:
        f.direction === "payin"
          ? [debit(clearing, f.amount), credit(suspense, f.amount)]
          : [credit(clearing, f.amount), debit(suspense, f.amount)],
    });
    return;
  }
  if (event.type !== "resolved") return;
  const resolution = event.fact?.resolution;
  if (!resolution) throw new InvalidEventError(`provider fact ${f.id}: resolved without a resolution`);
  // Both moves leave suspense: a recorded event may arrive after its resolution (they are
  // separate messages), so the recording is posted first in this transaction if needed.
  await applyProviderFactEvent(tx, { ...event, type: "recorded" });
  const inbound = resolution.action === "credit_shop" || resolution.action === "return_to_payer";
  const outbound = resolution.action === "debit_shop" || resolution.action === "write_off";
  if (!inbound && !outbound)
    throw new InvalidEventError(`provider fact ${f.id}: unknown resolution ${resolution.action}`);
  if (inbound !== (f.direction === "payin"))
    throw new InvalidEventError(
      `provider fact ${f.id}: ${resolution.action} does not fit a ${f.direction} fact`,
    );
  let postings: Posting[];
  if (resolution.action === "return_to_payer") {
    postings = [debit(suspense, f.amount), credit(account(f.owner, f.currency, "payer_returns"), f.amount)];
  } else if (resolution.action === "write_off") {
    postings = [credit(suspense, f.amount), debit(account(f.owner, f.currency, "losses"), f.amount)];
  } else {
    postings = shopPostings(f, resolution);
  }
  await postTransfer(tx, {
    key: `fact:${f.id}:resolved`,
    kind: `provider_fact_${resolution.action}`,
    shopId: f.owner,
    operationId: event.fact?.operationId,
    metadata: { operator: resolution.operator, reason: resolution.reason },
    postings,
  });
}

/**
 * The postings between suspense and the shop, at the figures operations computed:
 * `credit_shop` moves money that came in to `available` less `commission_revenue`;
 * `debit_shop` charges `available` for money that went out plus `commission_revenue`, as
 * a payout is charged. `fx_conversion` of each currency takes its side when the
 * settlement currency is another.
 */
function shopPostings(f: FactFigures, resolution: NonNullable<ProviderFact["resolution"]>): Posting[] {
  const target = resolution.settlementCurrency ?? "";
  if (!isCurrency(target)) throw new InvalidEventError(`provider fact ${f.id}: no settlement currency`);
  const settlement = new Decimal(resolution.settlementAmount ?? "NaN");
  const commission = new Decimal(resolution.commissionAmount ?? "NaN");
  if (!settlement.isFinite() || !commission.isFinite())
    throw new InvalidEventError(`provider fact ${f.id}: ${resolution.action} without figures`);
  const suspense = account(f.owner, f.currency, "suspense");
  const fxSource = account(f.owner, f.currency, "fx_conversion");
  const fxTarget = account(f.owner, target, "fx_conversion");
  const available = account(f.owner, target, "available");
  const revenue = account(f.owner, target, "commission_revenue");
  const sameCurrency = target === f.currency;
  if (resolution.action === "credit_shop") {
    const gross = settlement.plus(commission);
    return [
      debit(suspense, f.amount),
      ...(sameCurrency ? [] : [credit(fxSource, f.amount), debit(fxTarget, gross)]),
      credit(available, settlement),
      credit(revenue, commission),
    ];
  }
  // A payout's settlement is what it costs the shop: the converted amount plus the commission.
  const converted = settlement.minus(commission);
  return [
    credit(suspense, f.amount),
    ...(sameCurrency ? [] : [debit(fxSource, f.amount), credit(fxTarget, converted)]),
    debit(available, settlement),
    credit(revenue, commission),
  ];
}

/** The suspense consumer's decode and handle, shared by the runner and an operator's retry of a dead letter. */
export const suspenseApplier: EventApplier<ProviderFactEvent> = {
  durable: SUSPENSE_CONSUMER,
  decode: (data) => fromBinary(ProviderFactEventSchema, data),
  handle: (tx, event) => applyProviderFactEvent(tx, event),
};

/** Starts the durable consumer that books provider facts. */
export function startSuspenseConsumer(options: {
  nats: Nats;
  prefix: string;
  sql: Sql;
  logger: Logger;
  retry?: RetryPolicy | undefined;
}): Promise<RunningConsumer> {
  return runConsumer({
    ...suspenseApplier,
    nats: options.nats,
    prefix: options.prefix,
    subjects: [...CONSUMER_SUBJECTS["ledger-provider-facts"]],
    sql: options.sql,
    schema: "ledger",
    logger: options.logger,
    ...(options.retry ? { retry: options.retry } : {}),
  });
}
