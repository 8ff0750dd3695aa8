import { createHash } from "node:crypto";
import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { domainEvents, eventsPublished, outboxUnpublished } from "./metrics.ts";

export interface OutboxRelayOptions {
  sql: Sql;
  /** The service's schema; its `outbox` table is relayed. */
  schema: string;
  js: JetStreamClient;
  logger: Logger;
  /** Rows published per transaction. Bounded so one batch never holds locks for long. */
  batchSize?: number;
  /** Safety poll when a NOTIFY was missed (for example across a Postgres restart). */
  pollMs?: number;
  /** Published rows are kept this long for audits, then deleted. */
  retentionMs?: number;
}

/** How often the relay counts the rows still waiting, for the `outbox_unpublished` gauge. */
const SAMPLE_EVERY_MS = 1000;

/** A 64-bit advisory lock key for the relay of one schema, the same in every replica. */
function relayLockKey(schema: string): string {
  return createHash("sha256").update(`outbox-relay:${schema}`).digest().readBigInt64BE(0).toString();
}

/**
 * Publishes committed outbox rows to JetStream in commit order, with the row id as the
 * Nats-Msg-Id. A row is marked published in the same transaction that locked it, after
 * JetStream acknowledged it: a crash in between republishes the batch, which the
 * stream's duplicate window and the consumers' inboxes both absorb.
 *
 * Replicas take turns rather than split the rows: each batch runs under a transaction
 * advisory lock on the schema, and a replica that cannot take it publishes nothing this
 * round. Two replicas publishing neighbouring batches at once would interleave them in
 * the stream, and the events of one operation would no longer arrive in order.
 */
export class OutboxRelay {
  readonly #o: Required<OutboxRelayOptions>;
  /** `relayLockKey(schema)`, computed once rather than hashed for every batch. */
  readonly #lockKey: string;
  #running = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #published = 0;
  /** Set by a NOTIFY that arrived while a batch was in flight, so it is not slept through. */
  #notified = false;
  #lastSample = 0;
  /** Whether the last batch found another replica publishing; it then waits its turn. */
  #otherReplicaBusy = false;

  constructor(options: OutboxRelayOptions) {
    this.#o = { batchSize: 256, pollMs: 1000, retentionMs: 24 * 3600 * 1000, ...options };
    this.#lockKey = relayLockKey(options.schema);
  }

  /** Events published by this relay since start. */
  get published(): number {
    return this.#published;
  }

  async start(): Promise<void> {
    this.#running = true;
    const listener = await this.#o.sql.listen(`outbox_${this.#o.schema}`, () => {
      this.#notified = true;
      this.#wake?.();
    });
    this.#unlisten = () => listener.unlisten();
    this.#loop = this.#run();
  }

  /** Stops after the batch in flight, so a SIGTERM never leaves a batch half-marked. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    await this.#unlisten?.().catch(() => {});
  }

  /** Publishes one batch; returns how many rows it published. */
  async drainOnce(): Promise<number> {
    const { sql, schema, js, batchSize } = this.#o;
    const count = await sql.begin(async (tx) => {
      const [lock] = await tx<
        { ok: boolean }[]
      >`select pg_try_advisory_xact_lock(${this.#lockKey}::bigint) as ok`;
      this.#otherReplicaBusy = !lock?.ok;
      if (this.#otherReplicaBusy) return 0;
      const rows = await tx<
        { seq: string; id: string; subject: string; payload: Buffer; headers: Record<string, string> }[]
      >`
        select seq, id, subject, payload, headers from ${sql(schema)}.outbox
        where published_at is null order by seq limit ${batchSize} for update skip locked`;
      if (rows.length === 0) return 0;
      // Publishes go out in order on one connection, so the stream stores them in order;
      // awaiting them together keeps a batch to one round trip of acks.
      await Promise.all(
        rows.map((row) => {
          const h = natsHeaders();
          for (const [k, v] of Object.entries(row.headers)) h.set(k, v);
          return js.publish(row.subject, row.payload, { msgID: row.id, headers: h });
        }),
      );
      await tx`update ${sql(schema)}.outbox set published_at = now() where seq = any(${rows.map((r) => r.seq)}::bigint[])`;
      for (const row of rows)
        domainEvents.inc({ schema, type: row.subject.slice(row.subject.indexOf(".") + 1) });
      return rows.length;
    });
    this.#published += count;
    if (count > 0) eventsPublished.inc({ schema }, count);
    return count;
  }

  async #run(): Promise<void> {
    let failures = 0;
    let lastCleanup = 0;
    while (this.#running) {
      let published = 0;
      this.#notified = false;
      try {
        published = await this.drainOnce();
        failures = 0;
        if (Date.now() - lastCleanup > 60_000) {
          lastCleanup = Date.now();
          await this.#cleanup();
        }
      } catch (err) {
        failures++;
        this.#o.logger.warn({ err, failures }, "outbox relay batch failed; retrying");
      }
      // Sampled whether or not the batch went out: a relay that cannot publish is exactly
      // when the backlog must show.
      if (Date.now() - this.#lastSample >= SAMPLE_EVERY_MS) await this.#sample().catch(() => {});
      if (!this.#running) break;
      // A full batch or a NOTIFY during the batch means more rows may be waiting.
      if (failures === 0 && !this.#otherReplicaBusy && (published === this.#o.batchSize || this.#notified))
        continue;
      // Back off exponentially on failure (capped at 5 s); otherwise sleep until NOTIFY.
      const waitMs = failures > 0 ? Math.min(5000, 100 * 2 ** failures) : this.#o.pollMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async #sample(): Promise<void> {
    const { sql, schema } = this.#o;
    this.#lastSample = Date.now();
    const [row] = await sql<
      { n: string }[]
    >`select count(*) as n from ${sql(schema)}.outbox where published_at is null`;
    outboxUnpublished.set({ schema }, Number(row?.n ?? 0));
  }

  async #cleanup(): Promise<void> {
    const { sql, schema, retentionMs } = this.#o;
    await sql`delete from ${sql(schema)}.outbox where published_at < now() - ${`${retentionMs} milliseconds`}::interval`;
  }
}
