import type { Extraction } from "../layouts/index.ts";

/** A key under which a transfer is recorded: the same key on two operations is one transfer used twice. */
export interface ReuseKey {
  key: string;
  /** How an operator reads it: "transaction sbp:A40…". */
  detail: string;
}

/** The keys of the transfer a receipt shows. */
export function reuseKeys(x: Extraction | undefined): ReuseKey[] {
  if (!x?.transactionId) return [];
  return [{ key: `tx:${x.transactionId}`, detail: `transaction ${x.transactionId}` }];
}
