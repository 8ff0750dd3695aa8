import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";

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

/**
 * Publishes committed outbox rows to JetStream in commit order, with the row id as the
 * Nats-Msg-Id. A row is marked published in the same transaction that locked it, after
 * JetStream acknowledged it: a crash in between republishes the batch, which the
 * stream's duplicate window and the consumers' inboxes both absorb. Replicas share the
 * work through FOR UPDATE SKIP LOCKED.
 */
export class OutboxRelay {
  readonly #o: Required<OutboxRelayOptions>;
  #running = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #published = 0;

  constructor(options: OutboxRelayOptions) {
    this.#o = { batchSize: 256, pollMs: 1000, retentionMs: 24 * 3600 * 1000, ...options };
  }

  /** Events published by this relay since start. */
  get published(): number {
    return this.#published;
  }

  async start(): Promise<void> {
    this.#running = true;
    const listener = await this.#o.sql.listen(`outbox_${this.#o.schema}`, () => this.#wake?.());
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
      const rows = await tx<{ seq: string; id: string; subject: string; payload: Buffer; headers: Record<string, string> }[]>`
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
      return rows.length;
    });
    this.#published += count;
    return count;
  }

  async #run(): Promise<void> {
    let failures = 0;
    let lastCleanup = 0;
    while (this.#running) {
      let published = 0;
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
      if (published === this.#o.batchSize && failures === 0) continue;
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

  async #cleanup(): Promise<void> {
    const { sql, schema, retentionMs } = this.#o;
    await sql`delete from ${sql(schema)}.outbox where published_at < now() - ${`${retentionMs} milliseconds`}::interval`;
  }
}
