import { CURRENCIES, type Currency, Decimal, formatAmount } from "@gw/money";
import type postgres from "postgres";

/** The kinds of account; see README.md for what each one holds. */
export const ACCOUNT_KINDS = [
  "available",
  "reserved",
  "commission_revenue",
  "provider_clearing",
  "fx_conversion",
  "adjustments",
  "suspense",
  "payer_returns",
  "losses",
] as const;
export type AccountKind = (typeof ACCOUNT_KINDS)[number];

/** An account named by its natural key; it is created on its first posting. */
export interface AccountRef {
  owner: string;
  currency: Currency;
  kind: AccountKind;
}

export type Side = "debit" | "credit";

export interface Posting {
  account: AccountRef;
  side: Side;
  /** Positive, at most the currency's scale. Zero postings are dropped. */
  amount: Decimal;
}

export interface TransferSpec {
  /** Idempotency key: a second transfer with the same key posts nothing. */
  key: string;
  kind: string;
  shopId: string;
  operationId?: string;
  requestHash?: string;
  metadata?: Record<string, string>;
  postings: Posting[];
}

export interface PostedTransfer {
  id: string;
  /** False when a transfer with the same key already existed and nothing was posted. */
  created: boolean;
  /** The stored request hash of the transfer with this key (the earlier one if not created). */
  requestHash: string | null;
}

/** A transfer whose debits and credits differ in some currency; a programming or data error. */
export class UnbalancedTransferError extends Error {
  readonly code = "unbalanced_transfer";
  readonly key: string;
  readonly currency: string;
  /** Credits minus debits in `currency`. */
  readonly difference: string;

  constructor(key: string, currency: string, difference: string) {
    super(`transfer ${key} does not balance in ${currency}: credits - debits = ${difference}`);
    this.name = "UnbalancedTransferError";
    this.key = key;
    this.currency = currency;
    this.difference = difference;
  }
}

/** A posting amount that is negative or finer than its currency's scale. */
export class InvalidPostingError extends Error {
  readonly code = "invalid_posting";
  constructor(message: string) {
    super(message);
    this.name = "InvalidPostingError";
  }
}

export const debit = (account: AccountRef, amount: Decimal): Posting => ({ account, side: "debit", amount });
export const credit = (account: AccountRef, amount: Decimal): Posting => ({
  account,
  side: "credit",
  amount,
});

/** Signed effect of a posting on its account's credit-natural balance. */
const signed = (p: Posting) => (p.side === "credit" ? p.amount : p.amount.neg());

const accountKey = (a: AccountRef) => `${a.owner}\u0000${a.currency}\u0000${a.kind}`;

/**
 * Drops zero postings and checks the rest: amounts positive and at their currency's
 * scale, and for every currency the debits equal the credits. Throws on any violation;
 * nothing has been written when it throws.
 */
export function checkPostings(key: string, postings: Posting[]): Posting[] {
  const kept = postings.filter((p) => !p.amount.isZero());
  const net = new Map<string, Decimal>();
  for (const p of kept) {
    if (p.amount.isNeg()) {
      throw new InvalidPostingError(`transfer ${key}: negative amount ${p.amount.toFixed()}`);
    }
    if (p.amount.decimalPlaces() > CURRENCIES[p.account.currency].scale) {
      throw new InvalidPostingError(
        `transfer ${key}: ${p.amount.toFixed()} is finer than ${p.account.currency} allows`,
      );
    }
    net.set(p.account.currency, (net.get(p.account.currency) ?? new Decimal(0)).plus(signed(p)));
  }
  for (const [currency, diff] of net) {
    if (!diff.isZero()) throw new UnbalancedTransferError(key, currency, diff.toFixed());
  }
  return kept;
}

/**
 * Posts a transfer inside the caller's transaction: the transfer row (unique by key),
 * its postings, and the running balance of every account it touches. Balances are
 * updated in account-id order so that two transfers over the same accounts lock them in
 * the same order and cannot deadlock each other. A key already posted returns the
 * existing transfer and posts nothing, which makes every caller idempotent.
 */
export async function postTransfer(tx: postgres.TransactionSql, spec: TransferSpec): Promise<PostedTransfer> {
  const postings = checkPostings(spec.key, spec.postings);
  const [inserted] = await tx<{ id: string }[]>`
    insert into ledger.transfers (key, kind, shop_id, operation_id, request_hash, metadata)
    values (${spec.key}, ${spec.kind}, ${spec.shopId}, ${spec.operationId ?? null}, ${spec.requestHash ?? null},
            ${JSON.stringify(spec.metadata ?? {})}::jsonb)
    on conflict (key) do nothing
    returning id`;
  if (!inserted) {
    const [existing] = await tx<{ id: string; request_hash: string | null }[]>`
      select id, request_hash from ledger.transfers where key = ${spec.key}`;
    if (!existing) throw new Error(`transfer ${spec.key} conflicted but cannot be read`);
    return { id: existing.id, created: false, requestHash: existing.request_hash };
  }
  if (postings.length === 0) return { id: inserted.id, created: true, requestHash: spec.requestHash ?? null };

  const ids = await accountIds(
    tx,
    postings.map((p) => p.account),
  );
  const rows = postings.map((p) => ({
    transfer_id: inserted.id,
    account_id: ids.get(accountKey(p.account))!,
    currency: p.account.currency,
    side: p.side,
    // Stored at the currency's scale, so balances print as the currency writes them.
    amount: formatAmount(p.amount, p.account.currency),
  }));
  await tx`insert into ledger.postings ${tx(rows)}`;

  const deltas = new Map<string, { currency: Currency; delta: Decimal }>();
  for (const p of postings) {
    const id = ids.get(accountKey(p.account))!;
    const prev = deltas.get(id)?.delta ?? new Decimal(0);
    deltas.set(id, { currency: p.account.currency, delta: prev.plus(signed(p)) });
  }
  for (const id of [...deltas.keys()].sort()) {
    const { currency, delta } = deltas.get(id)!;
    await tx`update ledger.accounts set balance = balance + ${formatAmount(delta, currency)}::numeric where id = ${id}`;
  }
  return { id: inserted.id, created: true, requestHash: spec.requestHash ?? null };
}

/** Creates the accounts that do not exist yet and returns every account's id by its key. */
async function accountIds(tx: postgres.TransactionSql, refs: AccountRef[]): Promise<Map<string, string>> {
  const unique = [...new Map(refs.map((r) => [accountKey(r), r])).values()].sort((a, b) =>
    accountKey(a) < accountKey(b) ? -1 : 1,
  );
  const owners = unique.map((r) => r.owner);
  const currencies = unique.map((r) => r.currency);
  const kinds = unique.map((r) => r.kind);
  await tx`
    insert into ledger.accounts (owner, currency, kind)
    select * from unnest(${owners}::text[], ${currencies}::text[], ${kinds}::text[])
    on conflict do nothing`;
  const found = await tx<{ id: string; owner: string; currency: Currency; kind: AccountKind }[]>`
    select a.id, a.owner, a.currency, a.kind
    from ledger.accounts a
    join unnest(${owners}::text[], ${currencies}::text[], ${kinds}::text[]) as r(owner, currency, kind)
      on a.owner = r.owner and a.currency = r.currency and a.kind = r.kind`;
  const ids = new Map(found.map((a) => [accountKey(a), a.id]));
  if (ids.size !== unique.length) throw new Error("accounts missing after insert");
  return ids;
}
