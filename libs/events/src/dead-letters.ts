import type { Sql } from "@gw/db";
import { metricsRegistry } from "@gw/rpc";
import type postgres from "postgres";
import { Gauge } from "prom-client";

/** Where a dead letter stands: waiting for an operator, applied by a retry, or left unapplied. */
export const DEAD_LETTER_STATUSES = ["open", "retried", "discarded"] as const;
export type DeadLetterStatus = (typeof DEAD_LETTER_STATUSES)[number];
export const isDeadLetterStatus = (value: string): value is DeadLetterStatus =>
  (DEAD_LETTER_STATUSES as readonly string[]).includes(value);

/** One row of a service's `dead_letters` table. */
export interface DeadLetterRow {
  consumer: string;
  event_id: string;
  subject: string;
  payload: Uint8Array;
  attempts: number;
  error: string;
  status: DeadLetterStatus;
  first_failed_at: Date | string;
  last_failed_at: Date | string;
  resolved_at: Date | string | null;
  resolved_by: string | null;
  resolution_reason: string | null;
}

/** What a retry needs of a consumer: how it reads a payload and applies the event. */
export interface EventApplier<T = unknown> {
  /** The durable consumer name, the key of its inbox and dead-letter rows. */
  durable: string;
  decode: (data: Uint8Array) => T;
  handle: (tx: postgres.TransactionSql, event: T, eventId: string) => Promise<void>;
  /** See `ConsumerOptions.skip`; a retry never asks it (a dead letter was not skipped). */
  skip?: (event: T) => boolean;
}

/** No dead letter of that consumer and event id. */
export class DeadLetterNotFoundError extends Error {
  readonly code = "dead_letter_not_found";
  constructor(consumer: string, eventId: string) {
    super(`no dead letter of consumer ${consumer} for event ${eventId}`);
    this.name = "DeadLetterNotFoundError";
  }
}

/** The dead letter was already retried or discarded; a decision is never taken twice. */
export class DeadLetterResolvedError extends Error {
  readonly code = "dead_letter_resolved";
  constructor(consumer: string, eventId: string, status: string) {
    super(`the dead letter of consumer ${consumer} for event ${eventId} is already ${status}`);
    this.name = "DeadLetterResolvedError";
  }
}

/** A retry whose handler failed again; the row keeps `open` with the new error and one more attempt. */
export class DeadLetterRetryFailedError extends Error {
  readonly code = "dead_letter_retry_failed";
  constructor(consumer: string, eventId: string, cause: string) {
    super(`the retry of event ${eventId} by consumer ${consumer} failed: ${cause}`);
    this.name = "DeadLetterRetryFailedError";
  }
}

/** Error text kept on a row: bounded, so a huge message cannot bloat the table. */
const MAX_ERROR_CHARS = 2000;

/** The text of a failure as the dead-letter row keeps it. */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text;
}

/**
 * Records an event its consumer gave up on. A second recording of the same event (its
 * ack was lost and it failed again) updates the open row; a row already retried or
 * discarded is left as the operator decided.
 */
export async function recordDeadLetter(
  sql: Sql,
  schema: string,
  entry: {
    consumer: string;
    eventId: string;
    subject: string;
    payload: Uint8Array;
    attempts: number;
    error: string;
  },
): Promise<void> {
  await sql`
    insert into ${sql(schema)}.dead_letters (consumer, event_id, subject, payload, attempts, error)
    values (${entry.consumer}, ${entry.eventId}, ${entry.subject}, ${Buffer.from(entry.payload)},
            ${entry.attempts}, ${entry.error})
    on conflict (consumer, event_id) do update
      set attempts = greatest(dead_letters.attempts, excluded.attempts), error = excluded.error,
          last_failed_at = now()
      where dead_letters.status = 'open'`;
}

/** A service's dead letters, newest failure first, optionally of one status. */
export async function listDeadLetters(
  sql: Sql,
  schema: string,
  options: { status?: DeadLetterStatus; limit: number },
): Promise<DeadLetterRow[]> {
  const status = options.status ?? null;
  return sql<DeadLetterRow[]>`
    select * from ${sql(schema)}.dead_letters
    where ${status}::text is null or status = ${status}
    order by last_failed_at desc, consumer, event_id
    limit ${options.limit}`;
}

/**
 * Applies a dead letter's event again through its consumer's handler, in one transaction
 * that marks the row `retried` and records the event in the inbox, exactly as the
 * consumer would have: an event the inbox already holds is marked without being applied
 * twice. The row's lock, taken first, makes a concurrent retry or discard wait and then
 * find it resolved. When the handler fails, nothing of the attempt stays but one more
 * attempt and the new error on the still open row.
 */
export async function retryDeadLetter<T>(
  sql: Sql,
  schema: string,
  applier: EventApplier<T>,
  eventId: string,
  operator: string,
): Promise<DeadLetterRow> {
  const consumer = applier.durable;
  try {
    return await sql.begin(async (tx) => {
      const [row] = await tx<DeadLetterRow[]>`
        select * from ${sql(schema)}.dead_letters where consumer = ${consumer} and event_id = ${eventId} for update`;
      if (!row) throw new DeadLetterNotFoundError(consumer, eventId);
      if (row.status !== "open") throw new DeadLetterResolvedError(consumer, eventId, row.status);
      const inserted = await tx`
        insert into ${sql(schema)}.inbox (consumer, event_id) values (${consumer}, ${eventId})
        on conflict do nothing returning 1`;
      if (inserted.length > 0) await applier.handle(tx, applier.decode(row.payload), eventId);
      const [retried] = await tx<DeadLetterRow[]>`
        update ${sql(schema)}.dead_letters
        set status = 'retried', resolved_at = now(), resolved_by = ${operator}
        where consumer = ${consumer} and event_id = ${eventId}
        returning *`;
      return retried!;
    });
  } catch (err) {
    if (err instanceof DeadLetterNotFoundError || err instanceof DeadLetterResolvedError) throw err;
    const error = errorText(err);
    await sql`
      update ${sql(schema)}.dead_letters
      set attempts = attempts + 1, error = ${error}, last_failed_at = now()
      where consumer = ${consumer} and event_id = ${eventId} and status = 'open'`;
    throw new DeadLetterRetryFailedError(consumer, eventId, error);
  }
}

/** Marks an open dead letter `discarded` with the operator's reason; its event stays unapplied. */
export async function discardDeadLetter(
  sql: Sql,
  schema: string,
  consumer: string,
  eventId: string,
  operator: string,
  reason: string,
): Promise<DeadLetterRow> {
  return sql.begin(async (tx) => {
    const [row] = await tx<DeadLetterRow[]>`
      select * from ${sql(schema)}.dead_letters where consumer = ${consumer} and event_id = ${eventId} for update`;
    if (!row) throw new DeadLetterNotFoundError(consumer, eventId);
    if (row.status !== "open") throw new DeadLetterResolvedError(consumer, eventId, row.status);
    const [discarded] = await tx<DeadLetterRow[]>`
      update ${sql(schema)}.dead_letters
      set status = 'discarded', resolved_at = now(), resolved_by = ${operator}, resolution_reason = ${reason}
      where consumer = ${consumer} and event_id = ${eventId}
      returning *`;
    return discarded!;
  });
}

/**
 * The schemas whose open dead letters the `dead_letters_open` gauge reports, with the
 * consumers of this process in each (so a consumer with none reports 0, not nothing).
 */
const watched = new Map<string, { sql: Sql; consumers: Set<string> }>();

/** Has the gauge report `consumer`'s open dead letters in `schema`; returns the undo. */
export function watchDeadLetters(sql: Sql, schema: string, consumer: string): () => void {
  const entry = watched.get(schema) ?? { sql, consumers: new Set<string>() };
  entry.consumers.add(consumer);
  watched.set(schema, entry);
  return () => {
    entry.consumers.delete(consumer);
    if (entry.consumers.size === 0 && watched.get(schema) === entry) watched.delete(schema);
  };
}

/**
 * Open dead letters per schema and consumer, read from the tables at every scrape. Every
 * replica of a service reports the same count: take the max, not the sum.
 */
export const deadLettersOpen = new Gauge({
  name: "dead_letters_open",
  help: "Dead letters waiting for an operator (status open), per schema and consumer; read from the table at scrape time.",
  labelNames: ["schema", "consumer"],
  registers: [metricsRegistry],
  collect: () => sampleOpenDeadLetters(),
});

/**
 * Sets the gauge from the tables, at scrape time. A read that fails (the database is
 * down) leaves that schema's last values: the scrape still answers, and the outage shows
 * in the service's other metrics.
 */
export async function sampleOpenDeadLetters(): Promise<void> {
  for (const [schema, { sql, consumers }] of watched) {
    try {
      const rows = await sql<{ consumer: string; open: number }[]>`
        select consumer, count(*)::int as open from ${sql(schema)}.dead_letters
        where status = 'open' group by consumer`;
      const counts = new Map(rows.map((r) => [r.consumer, r.open]));
      for (const consumer of new Set([...consumers, ...counts.keys()])) {
        deadLettersOpen.set({ schema, consumer }, counts.get(consumer) ?? 0);
      }
    } catch {
      // Keep the last sample; see above.
    }
  }
}
