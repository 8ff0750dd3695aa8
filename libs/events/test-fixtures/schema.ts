import { inboxTable, outboxTable, type Sql } from "@gw/db";
import { pgSchema } from "drizzle-orm/pg-core";

/**
 * Creates a throwaway service schema holding the same `outbox`, `inbox` and
 * `dead_letters` tables a service's drizzle migration makes (see
 * services/ledger/drizzle), plus an `applied`
 * table where test handlers count how often each event took effect.
 */
export async function createEventSchema(sql: Sql, schema: string) {
  await sql.unsafe(`
    create schema "${schema}";
    create table "${schema}".outbox (
      seq bigserial primary key,
      id uuid not null unique,
      subject text not null,
      payload bytea not null,
      headers jsonb not null default '{}'::jsonb,
      created_at timestamptz not null default now(),
      published_at timestamptz
    );
    create index on "${schema}".outbox (seq) where published_at is null;
    create table "${schema}".inbox (
      consumer text not null,
      event_id uuid not null,
      processed_at timestamptz not null default now(),
      primary key (consumer, event_id)
    );
    create table "${schema}".dead_letters (
      consumer text not null,
      event_id uuid not null,
      subject text not null,
      payload bytea not null,
      attempts integer not null,
      error text not null,
      status text not null default 'open' check (status in ('open', 'retried', 'discarded')),
      first_failed_at timestamptz not null default now(),
      last_failed_at timestamptz not null default now(),
      resolved_at timestamptz,
      resolved_by text,
      resolution_reason text,
      primary key (consumer, event_id)
    );
    create table "${schema}".applied (
      event_id uuid primary key,
      times integer not null
    );
  `);
  const s = pgSchema(schema);
  return { outbox: outboxTable(s), inbox: inboxTable(s) };
}

/** Counts one application of an event inside the consumer's transaction. */
export async function countApplication(tx: { unsafe: Sql["unsafe"] }, schema: string, eventId: string) {
  await tx.unsafe(
    `insert into "${schema}".applied (event_id, times) values ($1, 1)
     on conflict (event_id) do update set times = applied.times + 1`,
    [eventId],
  );
}
