import type { Extraction } from "../layouts/index.ts";

/** A key under which a transfer is recorded: the same key on two operations is one transfer used twice. */
export interface ReuseKey {
  /** Which recorded column it is compared with. */
  kind: "transaction" | "transfer";
  key: string;
  /** How an operator reads it: "transaction sbp:A40…". */
  detail: string;
}

/**
 * The transfer a receipt shows, independent of how its identifiers are laid out: the
 * issuing bank, the amount, the minute (Moscow time, whatever format the bank printed)
 * and the recipient's last four visible digits. Two operations showing the same one are
 * one transfer shown twice, even with its identifiers retyped or left out.
 */
export function transferKey(x: Extraction, issuer: string | undefined): string | undefined {
  if (!issuer || !x.amount || !x.dateTime) return undefined;
  const recipient = x.recipientCard?.tail ?? x.recipientPhone?.replace(/\D/g, "").slice(-4);
  if (!recipient || recipient.length < 4) return undefined;
  const minute = x.dateTime.toISOString().slice(0, 16);
  return `${issuer}|${x.amount.toFixed(2)}|${minute}|${recipient}`;
}

/**
 * The keys a receipt is checked under: its transaction id; and only when it shows none
 * that can be read, the transfer itself. Many payers pay the same amount to the same
 * card, so the transfer key alone could join two honest payments made in the same
 * minute; it is the fallback for a receipt whose identifiers were retyped out of reach.
 * Both are recorded for every receipt (`recordedKeys`).
 */
export function reuseKeys(x: Extraction | undefined): ReuseKey[] {
  const all = recordedKeys(x);
  return x?.transactionId ? all.filter((k) => k.kind === "transaction") : all;
}

/** Every key a reviewed receipt is recorded under. */
export function recordedKeys(x: Extraction | undefined): ReuseKey[] {
  const keys: ReuseKey[] = [];
  if (x?.transactionId)
    keys.push({ kind: "transaction", key: x.transactionId, detail: `transaction ${x.transactionId}` });
  if (x?.transferKey)
    keys.push({
      kind: "transfer",
      key: x.transferKey,
      detail: `the same transfer (${x.transferKey.replaceAll("|", ", ")})`,
    });
  return keys;
}
