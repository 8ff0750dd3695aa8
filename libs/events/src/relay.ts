import { createHash } from "node:crypto";
import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import postgres from "postgres";
import { domainEvents, eventsPublished, outboxUnpublished } from "./metrics.ts";

export interface OutboxRelayOptions {
  sql: Sql;
  /** The service's schema; its `outbox` table is relayed. */
  schema: string;
  js: JetStreamClient;
  logger: Logger;
  /** Rows published per batch. Bounded so one batch's publishes and marking stay short. */
  batchSize?: number;
  /** Safety poll when a NOTIFY was missed (for example across a Postgres restart). */
  pollMs?: number;
  /** Published rows are kept this long for audits, then deleted. */
  retentionMs?: number;
}

/** How often the relay counts the rows still waiting, for the `outbox_unpublished` gauge. */
const SAMPLE_EVERY_MS = 1000;

/** How often the leader deletes rows published longer ago than the retention. */
const CLEANUP_EVERY_MS = 60_000;

/**
 * Server-side TCP keepalives of the leader's session (idle seconds, seconds between
 * probes, probes): a leader whose machine or network vanished without closing its socket
 * loses the lock in about 11 s rather than after the OS default of over two hours.
 */
const LEADER_KEEPALIVES = { tcp_keepalives_idle: 5, tcp_keepalives_interval: 2, tcp_keepalives_count: 3 };

/** A 64-bit advisory lock key for the relay of one schema, the same in every replica. */
export function relayLockKey(schema: string): string {
  return createHash("sha256").update(`outbox-relay:${schema}`).digest().readBigInt64BE(0).toString();
}

/**
 * Publishes committed outbox rows to JetStream in commit order, with the row id as the
 * Nats-Msg-Id. A row is marked published only after JetStream acknowledged it: a crash
 * in between republishes the batch, which the stream's duplicate window and the
 * consumers' inboxes both absorb.
 *
 * Replicas take turns rather than split the rows: two replicas publishing neighbouring
 * batches at once would interleave them in the stream, and the events of one operation
 * would no longer arrive in order. The leader is the replica whose own session holds a
 * session-level advisory lock on the schema. A batch is two statements on that session:
 * a select that takes the lock again and reads the batch, then, after the acks, one
 * autocommit update that marks it. Taking the lock again is re-entrant, so it costs the
 * leader nothing, is the whole of a follower's try, and proves the session still holds
 * the lock should the client have reconnected under it; the marking needs no lock, its
 * rows were acked. A transaction lock per batch cost five statements (begin, lock, select,
 * update, commit), a visible share of the CPU of a create at one batch per create.
 *
 * The session is a connection of its own, not `sql.reserve()`: a reserved connection whose
 * backend died is reconnected and handed to other queries by the pool, and the lock could
 * end up on a connection the service shares. It needs a real session (no transaction-mode
 * PgBouncer), as LISTEN does. The lock lives as long as the session: stop() closes it
 * after the batch in flight, a killed process's socket closes, and the server's keepalives
 * find a vanished host. A follower tries at its poll interval only, not on every NOTIFY,
 * so it costs one statement per poll and replaces a leader that stopped or died within
 * `pollMs`. A failed batch gives up the lead, so a replica that can publish takes its turn.
 *
 * A leader whose connection dies while its publishes are in flight can be replaced before
 * they land (the transaction lock had the same window, between the backend's death and
 * the process noticing). Order still holds: both publish the oldest unmarked rows in seq
 * order on one NATS connection each, so each row is stored by the first of its publishes
 * to arrive, after every row before it, and the later copies are duplicates within the
 * window. A batch waits for all of its publishes to settle before it fails, so a replica
 * giving up the lead leaves none in flight.
 */
export class OutboxRelay {
  readonly #o: Required<OutboxRelayOptions>;
  /** `relayLockKey(schema)`, computed once rather than hashed for every batch. */
  readonly #lockKey: string;
  /** The leader's session: one connection of its own, which holds the lock. */
  readonly #session: Sql;
  #running = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #published = 0;
  /** Set by a NOTIFY that arrived while a batch was in flight, so it is not slept through. */
  #notified = false;
  #lastSample = 0;
  #lastCleanup = 0;
  /** Whether the last batch held the lock; a follower waits for its poll. */
  #leading = false;

  constructor(options: OutboxRelayOptions) {
    this.#o = { batchSize: 256, pollMs: 1000, retentionMs: 24 * 3600 * 1000, ...options };
    this.#lockKey = relayLockKey(options.schema);
    const pool = options.sql.options;
    // The pool's own settings (and its type cache) on one connection that neither idles
    // out nor is recycled: closing it would hand the lead to another replica. postgres.js
    // builds its LISTEN connection the same way; its types do not allow parsed options.
    const session = {
      ...pool,
      max: 1,
      idle_timeout: null,
      max_lifetime: null,
      connection: { ...pool.connection, ...LEADER_KEEPALIVES },
    };
    this.#session = postgres(session as unknown as postgres.Options<Record<string, never>>);
  }

  /** Events published by this relay since start. */
  get published(): number {
    return this.#published;
  }

  async start(): Promise<void> {
    this.#running = true;
    const listener = await this.#o.sql.listen(`outbox_${this.#o.schema}`, () => {
      this.#notified = true;
      if (this.#leading) this.#wake?.();
    });
    this.#unlisten = () => listener.unlisten();
    this.#loop = this.#run();
  }

  /**
   * Stops after the batch in flight, so a SIGTERM never leaves a batch half-marked, then
   * closes the leader's session, which hands the lock to the next replica at once.
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    // Bounded: postgres.js's end() can wait for ever on a connection whose backend was
    // terminated under it; the leader has nothing in flight here, so closing is enough.
    await this.#session.end({ timeout: 1 }).catch(() => {});
    await this.#unlisten?.().catch(() => {});
  }

  /** Publishes one batch if this replica leads (taking the lead if it is free); returns how many rows it published. */
  async drainOnce(): Promise<number> {
    const { schema, js, batchSize } = this.#o;
    const db = this.#session;
    // One row with `ok` and nulls when the lead is elsewhere or nothing waits. The CTE is
    // materialized so the planner calls the lock function once, not once per use of `ok`.
    const rows = await db<
      {
        ok: boolean;
        seq: string | null;
        id: string;
        subject: string;
        payload: Buffer;
        headers: Record<string, string>;
      }[]
    >`
      with l as materialized (select pg_try_advisory_lock(${this.#lockKey}::bigint) as ok)
      select l.ok, o.seq, o.id, o.subject, o.payload, o.headers
      from l left join lateral (
        select seq, id, subject, payload, headers from ${db(schema)}.outbox
        where l.ok and published_at is null order by seq limit ${batchSize}
      ) o on true`;
    this.#leading = rows[0]?.ok === true;
    if (rows[0]?.seq == null) return 0;
    // Publishes go out in order on one connection, so the stream stores them in order;
    // awaiting them together keeps a batch to one round trip of acks.
    const settled = await Promise.allSettled(
      rows.map((row) => {
        const h = natsHeaders();
        for (const [k, v] of Object.entries(row.headers)) h.set(k, v);
        return js.publish(row.subject, row.payload, { msgID: row.id, headers: h });
      }),
    );
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    await db`update ${db(schema)}.outbox set published_at = now() where seq = any(${rows.map((r) => r.seq)}::bigint[])`;
    for (const row of rows)
      domainEvents.inc({ schema, type: row.subject.slice(row.subject.indexOf(".") + 1) });
    this.#published += rows.length;
    eventsPublished.inc({ schema }, rows.length);
    return rows.length;
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      let published = 0;
      this.#notified = false;
      try {
        published = await this.drainOnce();
        failures = 0;
      } catch (err) {
        failures++;
        this.#o.logger.warn({ err, failures }, "outbox relay batch failed; retrying");
        await this.#stepDown();
      }
      // Housekeeping runs on the pool and on its own clock, never once per batch. The
      // backlog is sampled whether or not the batch went out: a relay that cannot
      // publish is exactly when it must show.
      if (Date.now() - this.#lastSample >= SAMPLE_EVERY_MS) await this.#sample().catch(() => {});
      if (this.#leading && Date.now() - this.#lastCleanup >= CLEANUP_EVERY_MS) await this.#cleanup();
      if (!this.#running) break;
      // A full batch or a NOTIFY during the batch means more rows may be waiting.
      if (failures === 0 && this.#leading && (published === this.#o.batchSize || this.#notified)) continue;
      // Back off exponentially on failure (capped at 5 s); otherwise a leader sleeps
      // until NOTIFY, a follower until its next poll.
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

  /**
   * Gives up the lead after a failed batch. A session that died has lost the lock
   * already; the unlock then runs on a fresh session and finds nothing to release.
   */
  async #stepDown(): Promise<void> {
    this.#leading = false;
    await this.#session`select pg_advisory_unlock_all()`.catch(() => {});
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
    const { sql, schema, retentionMs, logger } = this.#o;
    this.#lastCleanup = Date.now();
    await sql`delete from ${sql(schema)}.outbox where published_at < now() - ${`${retentionMs} milliseconds`}::interval`.catch(
      (err: unknown) => logger.warn({ err }, "outbox cleanup failed; retrying later"),
    );
  }
}
