import type { outboxTable } from "@gw/db";
import { currentLogContext } from "@gw/log";
import { traceHeaders } from "@gw/rpc";
import { sql as dsql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

export interface OutboxRow {
  /** Event id: the JetStream Nats-Msg-Id and the consumers' dedupe key. */
  id: string;
  subject: string;
  payload: Uint8Array;
  headers?: Record<string, string>;
}

/** The header that carries the edge's request id along with an event. */
export const REQUEST_ID_EVENT_HEADER = "gw-request-id";

/**
 * The headers an event written now should carry: the `traceparent` (and `tracestate`)
 * of the active span, so consumers continue the trace of the change that caused the
 * event, and the request id of the log context. Stored in the outbox row's `headers`;
 * the relay copies them into the NATS message.
 */
export function eventHeaders(): Record<string, string> {
  const headers = traceHeaders();
  const requestId = currentLogContext().request_id;
  if (requestId !== undefined) headers[REQUEST_ID_EVENT_HEADER] = requestId;
  return headers;
}

/**
 * Queues an event inside the caller's transaction. It becomes visible to the relay only
 * if that transaction commits, so a state change and its event are never split. The
 * NOTIFY is delivered at commit and wakes the relay at once. Rows get `eventHeaders()`
 * under their own headers.
 */
export async function enqueueEvent(
  tx: PgDatabase<PgQueryResultHKT, Record<string, unknown>>,
  table: ReturnType<typeof outboxTable>,
  schema: string,
  rows: OutboxRow[],
): Promise<void> {
  if (rows.length === 0) return;
  const common = eventHeaders();
  await tx.insert(table).values(rows.map((r) => ({ ...r, headers: { ...common, ...r.headers } })));
  await tx.execute(dsql`select pg_notify(${`outbox_${schema}`}, '')`);
}
