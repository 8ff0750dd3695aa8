import type { Logger } from "@gw/log";
import { type Currency, Decimal, isCurrency } from "@gw/money";
import type { Operation, OperationEvent } from "@gw/proto/gateway/operations/v1/operations_pb";
import type postgres from "postgres";
import { type AccountKind, type AccountRef, credit, debit, type Posting, postTransfer } from "./transfers.ts";

/**
 * An event the ledger cannot post: a missing or malformed figure. The consumer logs it
 * and retries later with backoff instead of acking, so the event is never lost and the
 * stuck delivery is visible in the logs.
 */
export class InvalidEventError extends Error {
  readonly code = "invalid_event";
  constructor(message: string) {
    super(message);
    this.name = "InvalidEventError";
  }
}

/** The figures of an operation the ledger posts from, read and checked once. */
interface Figures {
  operationId: string;
  shopId: string;
  /** The method's currency: what moves at the provider. */
  currency: Currency;
  settlementCurrency: Currency;
  /** Payment: credited to the shop; payout: the total charged (amount + commission). */
  settlement: Decimal;
  commission: Decimal;
  /** Payment: actual amount received; payout: the amount paid out (actual, else expected). */
  providerAmount: Decimal;
}

const amountField = (op: Operation, name: string, text: string | undefined): Decimal => {
  if (text === undefined || !/^-?\d+(\.\d+)?$/.test(text)) {
    throw new InvalidEventError(`operation ${op.operationId}: ${name} is missing or not a decimal`);
  }
  return new Decimal(text);
};

function figures(event: OperationEvent): Figures {
  const op = event.operation;
  if (!op) throw new InvalidEventError(`event ${event.eventId} carries no operation`);
  const shopId = event.scope?.shopId;
  if (!shopId) throw new InvalidEventError(`event ${event.eventId} carries no shop`);
  if (!isCurrency(op.currency)) throw new InvalidEventError(`operation ${op.operationId}: unknown currency`);
  const settlementCurrency = op.settlementCurrency || op.currency;
  if (!isCurrency(settlementCurrency)) {
    throw new InvalidEventError(`operation ${op.operationId}: unknown settlement currency`);
  }
  const actual = op.actualAmount ? amountField(op, "actual_amount", op.actualAmount) : new Decimal(0);
  const providerAmount =
    op.type === "payout" && actual.isZero() ? amountField(op, "expected_amount", op.expectedAmount) : actual;
  return {
    operationId: op.operationId,
    shopId,
    currency: op.currency,
    settlementCurrency,
    settlement: amountField(op, "settlement_amount", op.settlementAmount),
    commission: amountField(op, "commission_amount", op.commissionAmount ?? "0"),
    providerAmount,
  };
}

const account = (shopId: string, currency: Currency, kind: AccountKind): AccountRef => ({
  owner: shopId,
  currency,
  kind,
});

/**
 * The legs that move `sourceAmount` of the method currency to `targetAmount` of the
 * settlement currency (inflow) or back (outflow). With no conversion the two amounts
 * must be the same and no leg is needed; with one, the fx_conversion account of each
 * currency takes its side, so every currency balances on its own.
 */
function conversion(
  f: Figures,
  direction: "in" | "out",
  sourceAmount: Decimal,
  targetAmount: Decimal,
): Posting[] {
  if (f.currency === f.settlementCurrency) return [];
  const source = account(f.shopId, f.currency, "fx_conversion");
  const target = account(f.shopId, f.settlementCurrency, "fx_conversion");
  return direction === "in"
    ? [credit(source, sourceAmount), debit(target, targetAmount)]
    : [debit(source, sourceAmount), credit(target, targetAmount)];
}

/** Applies one operation event inside the consumer's transaction (which also records it in the inbox). */
export async function applyOperationEvent(
  tx: postgres.TransactionSql,
  event: OperationEvent,
  logger: Logger,
): Promise<void> {
  switch (event.type) {
    case "payment.completed":
      return settlePayment(tx, figures(event));
    case "payout.pending":
      await payoutPending(tx, { ...figures(event), generation: version(event) });
      return;
    case "payout.completed":
      return payoutCompleted(tx, figures(event), logger);
    case "payout.rejected":
    case "payout.cancelled":
      return payoutReleased(tx, payoutRef(event), version(event));
    case PAYOUT_REFUSED:
      return payoutRefused(tx, payoutRef(event), version(event));
    default:
      // Other payment events move no money. A payout event this ledger does not know is
      // refused, never acked as a no-op: it may be an internal type a newer operations
      // added (as `payout.refused` was), which releases or moves money. It is redelivered
      // and then dead-lettered, visible until a ledger that knows it is deployed.
      if (event.type.startsWith("payout.") && !PAYOUT_NO_MONEY.has(event.type))
        throw new Error(`unknown payout event type ${event.type}: is this ledger older than operations?`);
      return;
  }
}

/** The payout events that move no money (seen only on a server given one wide filter subject). */
const PAYOUT_NO_MONEY = new Set(["payout.routing", "payout.awaiting_confirmation", "payout.manual_check"]);

/**
 * A completed payment: the provider holds the actual amount for us (provider_clearing
 * debited), converted when the shop settles in another currency, and the shop and the
 * commission are credited with the figures the operation carries. Without conversion
 * actual = settlement + commission must hold, or the transfer refuses to post.
 *
 * The ledger books exactly what the operation shows. Today's rule caps a payin's
 * commission at the captured amount, so its settlement is never negative; an operation
 * shown with a negative settlement (events written before that rule) debits the shop by
 * that much instead of failing on a negative posting.
 */
async function settlePayment(tx: postgres.TransactionSql, f: Figures): Promise<void> {
  const gross = f.settlement.plus(f.commission);
  const available = account(f.shopId, f.settlementCurrency, "available");
  await postTransfer(tx, {
    key: `op:${f.operationId}:settle`,
    kind: "payment_settle",
    shopId: f.shopId,
    operationId: f.operationId,
    postings: [
      debit(account(f.shopId, f.currency, "provider_clearing"), f.providerAmount),
      ...conversion(f, "in", f.providerAmount, gross),
      f.settlement.isNeg() ? debit(available, f.settlement.neg()) : credit(available, f.settlement),
      credit(account(f.shopId, f.settlementCurrency, "commission_revenue"), f.commission),
    ],
  });
}

/**
 * The internal event of a payout create that no provider accepted (never announced to the
 * merchant: the refusal is no decision, and a retry routes it again): its reserve, posted
 * before the first provider was asked, is released.
 */
export const PAYOUT_REFUSED = "payout.refused";

interface ReserveRow {
  state: "none" | "reserved" | "consumed" | "released";
  currency: Currency | null;
  amount: string | null;
  /** The operation version of the last reserve or release applied (text: a bigint). */
  generation: string;
}

/** The operation version an event carries (0 when absent). */
const version = (event: OperationEvent): bigint => BigInt(event.operation?.version ?? 0n);

/** The operation and shop of an event, all a release needs. */
export interface PayoutRef {
  operationId: string;
  shopId: string;
}

function payoutRef(event: OperationEvent): PayoutRef {
  const operationId = event.operation?.operationId;
  const shopId = event.scope?.shopId;
  if (!operationId || !shopId)
    throw new InvalidEventError(`event ${event.eventId} names no operation or shop`);
  return { operationId, shopId };
}

/**
 * Takes the row lock of a payout's reserve, creating the row on first sight, so that
 * the events of one payout apply one at a time even across consumer replicas.
 */
async function lockReserve(tx: postgres.TransactionSql, f: PayoutRef): Promise<ReserveRow> {
  await tx`
    insert into ledger.payout_reserves (operation_id, shop_id) values (${f.operationId}, ${f.shopId})
    on conflict do nothing`;
  const [row] = await tx<ReserveRow[]>`
    select state, currency, amount, generation::text as generation
    from ledger.payout_reserves where operation_id = ${f.operationId} for update`;
  if (!row) throw new Error(`payout reserve ${f.operationId} vanished`);
  return row;
}

type ReserveFigures = Pick<Figures, "operationId" | "shopId" | "settlementCurrency" | "settlement">;

async function postReserve(
  tx: postgres.TransactionSql,
  f: ReserveFigures,
  generation = 0n,
  again = false,
): Promise<void> {
  await postTransfer(tx, {
    // A reserve after a refused create's release is a new transfer of its own.
    key: again ? `op:${f.operationId}:reserve:${generation}` : `op:${f.operationId}:reserve`,
    kind: "payout_reserve",
    shopId: f.shopId,
    operationId: f.operationId,
    postings: [
      debit(account(f.shopId, f.settlementCurrency, "available"), f.settlement),
      credit(account(f.shopId, f.settlementCurrency, "reserved"), f.settlement),
    ],
  });
  await tx`
    update ledger.payout_reserves
    set state = 'reserved', currency = ${f.settlementCurrency}, amount = ${f.settlement.toFixed()}::numeric,
      generation = greatest(generation, ${generation.toString()}::bigint), updated_at = now()
    where operation_id = ${f.operationId}`;
}

/**
 * A payout reserves its total: available → reserved. The `ReservePayout` RPC posts it
 * before the payout's create asks its first provider, and the `payout.pending` event
 * posts it if that did not happen: whichever comes second finds it `reserved` and posts
 * nothing, so one reserve is held per payout. Never after a completion. After a release,
 * only for a newer operation version than the release's (`generation`): a refused
 * create's retry routes again under a newer version and reserves again, while a late or
 * repeated reserve of an earlier version, or any reserve after a rejection or cancel
 * (the newest version the payout ever has), posts nothing. Answers whether it posted,
 * and whether no reserve is held for this version (`notHeld`: after a completion, or a
 * release at this or a newer version).
 */
export async function payoutPending(
  tx: postgres.TransactionSql,
  f: ReserveFigures & { generation: bigint },
): Promise<{ posted: boolean; notHeld: boolean }> {
  const row = await lockReserve(tx, f);
  if (row.state === "none") {
    await postReserve(tx, f, f.generation);
    return { posted: true, notHeld: false };
  }
  if (row.state === "released" && f.generation > BigInt(row.generation)) {
    await postReserve(tx, f, f.generation, true);
    return { posted: true, notHeld: false };
  }
  if (row.state !== "reserved") return { posted: false, notHeld: true };
  await tx`
    update ledger.payout_reserves set generation = greatest(generation, ${f.generation.toString()}::bigint)
    where operation_id = ${f.operationId}`;
  return { posted: false, notHeld: false };
}

/**
 * A completed payout consumes its reserve: the reserved total leaves the shop, the
 * commission goes to revenue and the rest out through the provider (converted back to
 * the method currency when needed). If the completion arrives before the pending event
 * the reserve is posted first, in the same transaction. If the settled total differs
 * from what was reserved, the difference is taken from (or returned to) available.
 */
async function payoutCompleted(tx: postgres.TransactionSql, f: Figures, logger: Logger): Promise<void> {
  let row = await lockReserve(tx, f);
  if (row.state === "none") {
    await postReserve(tx, f);
    row = { ...row, state: "reserved", currency: f.settlementCurrency, amount: f.settlement.toFixed() };
  }
  if (row.state === "released") {
    logger.error(
      { operationId: f.operationId },
      "payout completed after its reserve was released; not posted",
    );
    return;
  }
  if (row.state !== "reserved") return;
  const reserved = new Decimal(row.amount ?? "0");
  const difference = f.settlement.minus(reserved);
  const outflow = f.settlement.minus(f.commission);
  const available = account(f.shopId, f.settlementCurrency, "available");
  const sameCurrency = f.currency === f.settlementCurrency;
  await postTransfer(tx, {
    key: `op:${f.operationId}:complete`,
    kind: "payout_complete",
    shopId: f.shopId,
    operationId: f.operationId,
    postings: [
      debit(account(f.shopId, f.settlementCurrency, "reserved"), reserved),
      difference.isNeg() ? credit(available, difference.neg()) : debit(available, difference),
      credit(account(f.shopId, f.settlementCurrency, "commission_revenue"), f.commission),
      ...conversion(f, "out", f.providerAmount, outflow),
      credit(account(f.shopId, f.currency, "provider_clearing"), sameCurrency ? outflow : f.providerAmount),
    ],
  });
  await tx`update ledger.payout_reserves set state = 'consumed', updated_at = now() where operation_id = ${f.operationId}`;
}

/**
 * A rejected or cancelled payout returns its reserve (reserved → available). With no
 * reserve yet the row is marked released all the same, so a late pending event posts
 * nothing.
 */
function payoutReleased(tx: postgres.TransactionSql, f: PayoutRef, generation: bigint): Promise<void> {
  return release(tx, f, generation, `op:${f.operationId}:release`);
}

/**
 * A payout create that no provider accepted returns the reserve it posted before asking
 * (`payout.refused`, queued with the refusal in one transaction, so a process that dies
 * right after the refusal still releases it). Once per refusal: a repeat, or a refusal
 * older than the reserve a retry of it has posted since (a newer `generation`), does
 * nothing; each refusal of a retried create releases that retry's reserve under a key of
 * its own.
 */
export async function payoutRefused(
  tx: postgres.TransactionSql,
  f: PayoutRef,
  generation: bigint,
): Promise<void> {
  const row = await lockReserve(tx, f);
  if (generation <= BigInt(row.generation) || row.state === "consumed") return;
  await release(tx, f, generation, `op:${f.operationId}:release:${generation}`);
}

async function release(
  tx: postgres.TransactionSql,
  f: PayoutRef,
  generation: bigint,
  key: string,
): Promise<void> {
  const row = await lockReserve(tx, f);
  if (row.state === "reserved" && row.currency && row.amount) {
    const amount = new Decimal(row.amount);
    const currency = row.currency;
    await postTransfer(tx, {
      key,
      kind: "payout_release",
      shopId: f.shopId,
      operationId: f.operationId,
      postings: [
        debit(account(f.shopId, currency, "reserved"), amount),
        credit(account(f.shopId, currency, "available"), amount),
      ],
    });
  }
  if (row.state !== "consumed") {
    await tx`
      update ledger.payout_reserves
      set state = 'released', generation = greatest(generation, ${generation.toString()}::bigint), updated_at = now()
      where operation_id = ${f.operationId}`;
  }
}
