import type { outboxTable } from "@gw/db";
import { sql as dsql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

export interface OutboxRow {
  /** Event id: the JetStream Nats-Msg-Id and the consumers' dedupe key. */
  id: string;
  subject: string;
  payload: Uint8Array;
  headers?: Record<string, string>;
}

/**
 * Queues an event inside the caller's transaction. It becomes visible to the relay only
 * if that transaction commits, so a state change and its event are never split. The
 * NOTIFY is delivered at commit and wakes the relay at once.
 */
export async function enqueueEvent(
  tx: PgDatabase<PgQueryResultHKT, Record<string, unknown>>,
  table: ReturnType<typeof outboxTable>,
  schema: string,
  rows: OutboxRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await tx.insert(table).values(rows.map((r) => ({ ...r, headers: r.headers ?? {} })));
  await tx.execute(dsql`select pg_notify(${`outbox_${schema}`}, '')`);
}
