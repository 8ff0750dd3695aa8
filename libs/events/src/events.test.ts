import { randomUUID } from "node:crypto";
import { connect, createTestDatabase, type Database, type Sql, type TestDatabase } from "@gw/db";
import { createLogger } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { AckPolicy, DeliverPolicy, type JetStreamClient, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPrefix, readStream, until } from "../test-fixtures/helpers.ts";
import { countApplication, createEventSchema } from "../test-fixtures/schema.ts";
import { runConsumer } from "./consumer.ts";
import { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
import { enqueueEvent, type OutboxRow } from "./outbox.ts";
import { OutboxRelay, relayLockKey } from "./relay.ts";

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const logger = createLogger("events-test", "silent");
const text = new TextEncoder();

let testDb: TestDatabase;
let sql: Sql;
let db: Database;
let nats: Nats;
const prefixes: string[] = [];

/** A stream of its own for one test, so tests never see each other's messages. */
async function freshStream() {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  await ensureStream(nats.jsm, prefix);
  return { prefix, stream: streamName(prefix) };
}

/** A throwaway service schema with its outbox and inbox. */
async function freshSchema() {
  const schema = `svc_${randomUUID().slice(0, 8)}`;
  return { schema, ...(await createEventSchema(sql, schema)) };
}

const event = (prefix: string, type: string, body = type): OutboxRow => ({
  id: randomUUID(),
  subject: `${prefix}.operations.${type}`,
  payload: text.encode(body),
});

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metricsRegistry.getSingleMetric(name)?.get())?.values ?? [];
  const found = metric.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value ?? 0;
}

beforeAll(async () => {
  testDb = await createTestDatabase();
  ({ sql, db } = connect(testDb.url, { max: 6 }));
  nats = await connectNats(NATS_URL, "events-test");
});

afterAll(async () => {
  for (const prefix of prefixes) await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.drain();
  await sql?.end({ timeout: 5 });
  await testDb?.drop();
});

describe("ensureStream", () => {
  it("creates the stream once when two services start at the same moment, and again is a no-op", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await Promise.all([ensureStream(nats.jsm, prefix), ensureStream(nats.jsm, prefix)]);
    const created = await nats.jsm.streams.info(streamName(prefix));
    await ensureStream(nats.jsm, prefix);
    const again = await nats.jsm.streams.info(streamName(prefix));

    expect(created.config.subjects).toEqual([`${prefix}.>`]);
    expect(created.config.duplicate_window).toBe(nanos(10 * 60 * 1000));
    expect(created.config.storage).toBe(StorageType.File);
    expect(created.config.num_replicas).toBe(1);
    expect(again.created).toBe(created.created);
  });

  it("asks for the configured number of copies: a single server refuses 3 with its own error", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await expect(ensureStream(nats.jsm, prefix, { replicas: 3 })).rejects.toThrow(/replicas|cluster/i);
    await expect(nats.jsm.streams.info(streamName(prefix))).rejects.toThrow(/not found/i);
  });

  it("updates a stream left with an older configuration instead of failing", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await nats.jsm.streams.add({
      name: streamName(prefix),
      subjects: [`${prefix}.>`],
      duplicate_window: nanos(5_000),
    });

    await ensureStream(nats.jsm, prefix);

    const info = await nats.jsm.streams.info(streamName(prefix));
    expect(info.config.duplicate_window).toBe(nanos(10 * 60 * 1000));
  });
});

describe("enqueueEvent and OutboxRelay", () => {
  it("publishes nothing for an event whose transaction rolled back", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    await expect(
      db.transaction(async (tx) => {
        await enqueueEvent(tx, outbox, schema, [event(prefix, "payment.pending")]);
        throw new Error("the state change failed");
      }),
    ).rejects.toThrow("the state change failed");

    const relay = new OutboxRelay({ sql, schema, js: nats.js, logger });
    expect(await relay.drainOnce()).toBe(0);
    await relay.stop();
    expect((await nats.jsm.streams.info(stream)).state.messages).toBe(0);
    expect(await sql`select 1 from ${sql(schema)}.outbox`).toHaveLength(0);
  });

  it("publishes committed events in commit order with the event id as Nats-Msg-Id", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const committed: OutboxRow[] = [];
    for (const type of ["payment.pending", "payment.awaiting_confirmation", "payment.completed"]) {
      const rows = [event(prefix, type, `${type}#1`), event(prefix, type, `${type}#2`)];
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, rows));
      committed.push(...rows);
    }
    // A small batch size makes the relay cross batch boundaries inside this run.
    const relay = new OutboxRelay({ sql, schema, js: nats.js, logger, batchSize: 4 });
    await relay.start();
    try {
      await until(
        async () => (await nats.jsm.streams.info(stream)).state.messages,
        (n) => n >= committed.length,
        {
          what: "all events in the stream",
        },
      );
    } finally {
      await relay.stop();
    }

    const stored = await readStream(nats, stream);
    expect(stored.map((m) => m.msgId)).toEqual(committed.map((r) => r.id));
    expect(stored.map((m) => m.subject)).toEqual(committed.map((r) => r.subject));
    expect(stored.map((m) => new TextDecoder().decode(m.data))).toEqual(
      committed.map((r) => new TextDecoder().decode(r.payload)),
    );
    expect(await sql`select 1 from ${sql(schema)}.outbox where published_at is null`).toHaveLength(0);
    expect(relay.published).toBe(committed.length);
    expect(await metricValue("events_published_total", { schema })).toBe(committed.length);
  });

  it("wakes on the commit's NOTIFY rather than waiting for its poll", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    // The safety poll is far beyond the wait below: only the NOTIFY can deliver in time.
    const relay = new OutboxRelay({ sql, schema, js: nats.js, logger, pollMs: 120_000 });
    await relay.start();
    try {
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, [event(prefix, "payout.pending")]));
      await until(
        async () => (await nats.jsm.streams.info(stream)).state.messages,
        (n) => n === 1,
        {
          timeoutMs: 10_000,
          what: "the notified event",
        },
      );
    } finally {
      await relay.stop();
    }
  });

  it("reports rows it cannot publish in outbox_unpublished", async () => {
    const { schema, outbox } = await freshSchema();
    // No stream holds this subject, so JetStream refuses every publish.
    const orphan = randomPrefix();
    await db.transaction((tx) =>
      enqueueEvent(tx, outbox, schema, [event(orphan, "a"), event(orphan, "b"), event(orphan, "c")]),
    );
    const relay = new OutboxRelay({ sql, schema, js: nats.js, logger });
    await relay.start();
    try {
      await until(
        () => metricValue("outbox_unpublished", { schema }),
        (n) => n === 3,
        { what: "gauge at 3" },
      );
    } finally {
      await relay.stop();
    }
    expect(relay.published).toBe(0);
  });

  it("lets only one of two relays publish at a time, so their batches never interleave", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const rows = Array.from({ length: 400 }, (_, i) => event(prefix, "payment.pending", String(i)));
    for (let i = 0; i < rows.length; i += 40) {
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, rows.slice(i, i + 40)));
    }
    // Two replicas: each its own pool and NATS connection, as two processes would have.
    const replicas = await Promise.all(
      [1, 2].map(async (n) => {
        const pool = connect(testDb.url, { max: 2 });
        const conn = await connectNats(NATS_URL, `relay-${n}`);
        const relay = new OutboxRelay({
          sql: pool.sql,
          schema,
          js: conn.js,
          logger,
          batchSize: 5,
          pollMs: 10,
        });
        return { pool, conn, relay };
      }),
    );
    await Promise.all(replicas.map((r) => r.relay.start()));
    try {
      await until(
        async () => (await nats.jsm.streams.info(stream)).state.messages,
        (n) => n >= rows.length,
        {
          what: "all events in the stream",
        },
      );
    } finally {
      for (const r of replicas) {
        await r.relay.stop();
        await r.conn.nc.drain();
        await r.pool.sql.end();
      }
    }
    const stored = await readStream(nats, stream);
    expect(stored.map((m) => m.msgId)).toEqual(rows.map((r) => r.id));
  });
});

describe("OutboxRelay leadership", () => {
  /** The backend holding the relay lock of `schema`, once one does. */
  const lockHolder = (schema: string) =>
    until(
      async () =>
        (
          await sql<{ pid: number }[]>`
            select pid from pg_locks
            where locktype = 'advisory' and granted
              and ((classid::bigint << 32) | objid::bigint) = ${relayLockKey(schema)}::bigint`
        )[0]?.pid,
      (pid) => pid !== undefined,
      { what: "a relay holding the lock" },
    ) as Promise<number>;

  /** Terminates a backend and waits until it is gone, so its client's next statement fails. */
  const terminate = async (pid: number) => {
    await sql`select pg_terminate_backend(${pid})`;
    await until(
      async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`).length,
      (n) => n === 0,
      { everyMs: 5, what: `backend ${pid} to exit` },
    );
  };

  /** `js` whose publishes run `around` each real publish: a fault or a pause at a chosen point. */
  const publishingThrough = (
    around: (publish: () => ReturnType<JetStreamClient["publish"]>) => ReturnType<JetStreamClient["publish"]>,
  ) =>
    new Proxy(nats.js, {
      get: (target, key, receiver) =>
        key === "publish"
          ? (...args: Parameters<JetStreamClient["publish"]>) => around(() => target.publish(...args))
          : Reflect.get(target, key, receiver),
    });

  const unpublished = async (schema: string) =>
    (
      await sql<
        { n: number }[]
      >`select count(*)::int as n from ${sql(schema)}.outbox where published_at is null`
    )[0]?.n;

  it("sends two statements per batch once it leads: the locking select and the marking update", async () => {
    const { prefix } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const statements: string[] = [];
    const relaySql = postgres(testDb.url, {
      max: 2,
      onnotice: () => {},
      debug: (_c, query) => statements.push(query),
    });
    const relay = new OutboxRelay({ sql: relaySql, schema, js: nats.js, logger });
    try {
      // The first batch connects and takes the lead; what counts is every batch after it.
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, [event(prefix, "payment.pending")]));
      expect(await relay.drainOnce()).toBe(1);
      for (let i = 0; i < 3; i++) {
        await db.transaction((tx) => enqueueEvent(tx, outbox, schema, [event(prefix, "payment.completed")]));
        statements.length = 0;
        expect(await relay.drainOnce()).toBe(1);
        expect(statements).toHaveLength(2);
      }
    } finally {
      await relay.stop();
      await relaySql.end();
    }
  });

  it("republishes a batch whose acks were lost before the marking, and the stream stores it once", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const rows = Array.from({ length: 6 }, (_, i) => event(prefix, "payment.pending", String(i)));
    await db.transaction((tx) => enqueueEvent(tx, outbox, schema, rows));
    let publishes = 0;
    // JetStream stores every row of the first batch, but the last ack never arrives:
    // the relay must not mark the batch, and must publish it again.
    const js = publishingThrough(async (publish) => {
      const ack = await publish();
      if (++publishes === rows.length) throw new Error("the ack was lost");
      return ack;
    });
    const relay = new OutboxRelay({ sql, schema, js, logger });
    try {
      await expect(relay.drainOnce()).rejects.toThrow("the ack was lost");
      expect(await unpublished(schema)).toBe(rows.length);
      expect(await relay.drainOnce()).toBe(rows.length);
    } finally {
      await relay.stop();
    }
    expect(publishes).toBe(2 * rows.length);
    expect(await unpublished(schema)).toBe(0);
    const stored = await readStream(nats, stream);
    expect(stored.map((m) => m.msgId)).toEqual(rows.map((r) => r.id));
  });

  it("hands the lead to the other replica when the leader's backend is terminated, keeping commit order", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const rows = Array.from({ length: 300 }, (_, i) => event(prefix, "payment.pending", String(i)));
    for (let i = 0; i < rows.length; i += 30) {
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, rows.slice(i, i + 30)));
    }
    const replicas = [1, 2].map((n) => {
      const pool = connect(testDb.url, { max: 2, application: `relay-${n}` });
      // Each publish waits a little, so a termination lands while a batch is in flight.
      const js = publishingThrough(async (publish) => {
        await new Promise((r) => setTimeout(r, 1));
        return publish();
      });
      const relay = new OutboxRelay({ sql: pool.sql, schema, js, logger, batchSize: 5, pollMs: 10 });
      return { pool, relay };
    });
    await Promise.all(replicas.map((r) => r.relay.start()));
    const stored = async () => (await nats.jsm.streams.info(stream)).state.messages;
    try {
      for (const point of [60, 140, 220]) {
        await until(stored, (n) => n >= point, { everyMs: 5, what: `the stream to reach ${point}` });
        await terminate(await lockHolder(schema));
      }
      await until(
        () => unpublished(schema),
        (n) => n === 0,
        { what: "the outbox to empty" },
      );
    } finally {
      for (const r of replicas) {
        await r.relay.stop();
        await r.pool.sql.end();
      }
    }
    // Both led at some point: the one terminated first backs off, the other polls.
    expect(replicas.map((r) => r.relay.published > 0)).toEqual([true, true]);
    const messages = await readStream(nats, stream);
    expect(messages.map((m) => m.msgId)).toEqual(rows.map((r) => r.id));
  });

  it("finishes and marks the whole batch in flight when stopped, then lets another replica lead at once", async () => {
    const { prefix, stream } = await freshStream();
    const { schema, outbox } = await freshSchema();
    const rows = Array.from({ length: 8 }, (_, i) => event(prefix, "payment.pending", String(i)));
    await db.transaction((tx) => enqueueEvent(tx, outbox, schema, rows));
    let entered!: () => void;
    const publishing = new Promise<void>((r) => {
      entered = r;
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const js = publishingThrough(async (publish) => {
      entered();
      await gate;
      return publish();
    });
    const relay = new OutboxRelay({ sql, schema, js, logger, batchSize: 5, pollMs: 120_000 });
    await relay.start();
    await publishing;
    let stopped = false;
    const stopping = relay.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    await stopping;

    expect(relay.published).toBe(5);
    expect(await unpublished(schema)).toBe(3);
    // The stopped relay gave up its lock with its connection: the next one leads at once.
    const next = new OutboxRelay({ sql, schema, js: nats.js, logger });
    try {
      expect(await next.drainOnce()).toBe(3);
    } finally {
      await next.stop();
    }
    const stored = await readStream(nats, stream);
    expect(stored.map((m) => m.msgId)).toEqual(rows.map((r) => r.id));
  });
});

describe("runConsumer", () => {
  it("hands its handler only the subjects on its list: the others cost no inbox row, and are acked", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    const handled: string[] = [];
    const consumer = await runConsumer({
      nats,
      prefix,
      durable: "narrow",
      subjects: ["operations.payment.completed", "operations.payout.pending"],
      sql,
      schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      async handle(tx, body, eventId) {
        handled.push(body);
        await countApplication(tx, schema, eventId);
      },
    });
    const published = ["payment.pending", "payment.completed", "payout.pending", "payout.completed"].map(
      (t) => event(prefix, t),
    );
    try {
      for (const e of published) await nats.js.publish(e.subject, e.payload, { msgID: e.id });
      await until(
        async () =>
          (await nats.jsm.consumers.info(stream, "narrow")).num_ack_pending +
          (await nats.jsm.consumers.info(stream, "narrow")).num_pending,
        (n) => n === 0,
        { what: "every message acked" },
      );
      await until(
        async () => (await sql`select count(*)::int as n from ${sql(schema)}.inbox`)[0]?.n as number,
        (n) => n === 2,
        { what: "the two subscribed events in the inbox" },
      );
    } finally {
      await consumer.stop();
    }
    expect(handled.sort()).toEqual(["payment.completed", "payout.pending"]);
    const inbox = await sql<{ event_id: string }[]>`select event_id from ${sql(schema)}.inbox`;
    expect(inbox.map((r) => r.event_id).sort()).toEqual([published[1]!.id, published[2]!.id].sort());
  });

  it("acks an event its skip says the handler does nothing with, without an inbox row, and counts it skipped", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    const durable = `skipping-${randomUUID().slice(0, 8)}`;
    const handled: string[] = [];
    const consumer = await runConsumer({
      nats,
      prefix,
      durable,
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      skip: (body) => body === "ignored",
      async handle(tx, body, eventId) {
        handled.push(body);
        await countApplication(tx, schema, eventId);
      },
    });
    const skipped = event(prefix, "payment.pending", "ignored");
    const applied = event(prefix, "payment.pending", "applied");
    try {
      for (const e of [skipped, applied]) await nats.js.publish(e.subject, e.payload, { msgID: e.id });
      await until(
        async () => {
          const info = await nats.jsm.consumers.info(stream, durable);
          return info.num_ack_pending + info.num_pending;
        },
        (n) => n === 0,
        { what: "every message acked" },
      );
    } finally {
      await consumer.stop();
    }
    expect(handled).toEqual(["applied"]);
    const inbox = await sql<{ event_id: string }[]>`select event_id from ${sql(schema)}.inbox`;
    expect(inbox.map((r) => r.event_id)).toEqual([applied.id]);
    expect(await metricValue("events_consumed_total", { consumer: durable, outcome: "skipped" })).toBe(1);
  });

  it("updates a durable consumer left with an older configuration in place, keeping its position", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    // An older version of the service: every operation event, and a larger ack window.
    await nats.jsm.consumers.add(stream, {
      durable_name: "upgraded",
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${prefix}.operations.>`,
      max_ack_pending: 1000,
    });
    const before = await nats.jsm.consumers.info(stream, "upgraded");
    const handled: string[] = [];
    const consumer = await runConsumer({
      nats,
      prefix,
      durable: "upgraded",
      subjects: ["operations.payment.cancelled"],
      maxAckPending: 1,
      sql,
      schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      async handle(tx, body, eventId) {
        handled.push(body);
        await countApplication(tx, schema, eventId);
      },
    });
    try {
      const after = await nats.jsm.consumers.info(stream, "upgraded");
      expect(after.created).toBe(before.created);
      expect(after.config.filter_subject).toBe(`${prefix}.operations.payment.cancelled`);
      expect(after.config.max_ack_pending).toBe(1);
      for (const e of [event(prefix, "payment.pending"), event(prefix, "payment.cancelled")])
        await nats.js.publish(e.subject, e.payload, { msgID: e.id });
      await until(
        async () => (await sql`select count(*)::int as n from ${sql(schema)}.inbox`)[0]?.n as number,
        (n) => n === 1,
        { what: "the cancelled payment in the inbox" },
      );
      // The server no longer hands out the pending payment at all.
      expect((await nats.jsm.consumers.info(stream, "upgraded")).num_pending).toBe(0);
    } finally {
      await consumer.stop();
    }
    expect(handled).toEqual(["payment.cancelled"]);
  });

  it("applies each event once, retries a failed handler, and records every id in the inbox", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const flaky = ids[1] as string;
    const deliveries = new Map<string, number>();
    const consumer = await runConsumer({
      nats,
      prefix,
      durable: "applier",
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      ackWaitMs: 2_000,
      retry: { maxAttempts: 10, baseMs: 20, maxMs: 80 },
      decode: (d) => new TextDecoder().decode(d),
      // Fails its first two calls: whether its first delivery came in a batch (which
      // fails, then applies each event alone once more) or alone, it is nak-ed and
      // applied at a redelivery.
      async handle(tx, _body, eventId) {
        const n = (deliveries.get(eventId) ?? 0) + 1;
        deliveries.set(eventId, n);
        await countApplication(tx, schema, eventId);
        if (eventId === flaky && n <= 2) throw new Error("transient failure");
      },
    });
    try {
      for (const id of ids)
        await nats.js.publish(`${prefix}.operations.payment.completed`, text.encode(id), { msgID: id });
      // Published outside the subject filter: the consumer must never see it.
      await nats.js.publish(`${prefix}.other.thing`, text.encode("x"), { msgID: randomUUID() });
      await until(
        async () => (await sql`select count(*)::int as n from ${sql(schema)}.inbox`)[0]?.n as number,
        (n) => n === ids.length,
        { what: "every event in the inbox" },
      );
    } finally {
      await consumer.stop();
    }

    const applied = await sql<
      { event_id: string; times: number }[]
    >`select event_id, times from ${sql(schema)}.applied`;
    expect(new Map(applied.map((r) => [r.event_id, r.times]))).toEqual(new Map(ids.map((id) => [id, 1])));
    const inbox = await sql<
      { consumer: string; event_id: string }[]
    >`select consumer, event_id from ${sql(schema)}.inbox`;
    expect(inbox.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    expect(inbox.every((r) => r.consumer === "applier")).toBe(true);
    expect(deliveries.get(flaky)).toBe(3);
    const info = await nats.jsm.consumers.info(stream, "applier");
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
    expect(
      await metricValue("events_consumed_total", { consumer: "applier", outcome: "failed" }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("applies an event once when the stream holds it twice, beyond the duplicate window", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    // A tiny window lets the same Nats-Msg-Id be stored twice, as after a relay that
    // republished a batch later than the real window.
    await nats.jsm.streams.update(stream, { duplicate_window: nanos(100) });
    const id = randomUUID();
    const subject = `${prefix}.operations.payment.completed`;
    await nats.js.publish(subject, text.encode("first"), { msgID: id });
    await until(
      async () => (await nats.js.publish(subject, text.encode("again"), { msgID: id })).duplicate,
      (duplicate) => !duplicate,
      { everyMs: 50, what: "a second copy stored" },
    );
    const durable = `dup_${randomUUID().slice(0, 8)}`;
    const consumer = await runConsumer({
      nats,
      prefix,
      durable,
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      handle: (tx, _body, eventId) => countApplication(tx, schema, eventId),
    });
    try {
      await until(
        async () => (await nats.jsm.consumers.info(stream, durable)).ack_floor.stream_seq,
        (seq) => seq >= 2,
        { what: "both copies acked" },
      );
    } finally {
      await consumer.stop();
    }

    expect(await sql`select times from ${sql(schema)}.applied where event_id = ${id}`).toEqual([
      { times: 1 },
    ]);
    expect(await metricValue("events_consumed_total", { consumer: durable, outcome: "duplicate" })).toBe(1);
    expect(await metricValue("events_consumed_total", { consumer: durable, outcome: "applied" })).toBe(1);
  });

  it("applies a message published without an event id once, under an id derived from its sequence", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    const durable = `noid_${randomUUID().slice(0, 8)}`;
    await nats.js.publish(`${prefix}.operations.payment.pending`, text.encode("no id"));
    const consumer = await runConsumer({
      nats,
      prefix,
      durable,
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      decode: (d) => d,
      handle: (tx, _body, eventId) => countApplication(tx, schema, eventId),
    });
    try {
      await until(
        async () => (await nats.jsm.consumers.info(stream, durable)).num_ack_pending,
        (n) => n === 0,
        {
          what: "the message acked",
        },
      );
      await until(
        async () => (await sql`select count(*)::int as n from ${sql(schema)}.inbox`)[0]?.n as number,
        (n) => n === 1,
        { what: "the message in the inbox" },
      );
    } finally {
      await consumer.stop();
    }
    const applied = await sql<{ times: number }[]>`select times from ${sql(schema)}.applied`;
    expect(applied).toEqual([{ times: 1 }]);
  });

  it("finishes the event in hand when stopped, and stops promptly when idle", async () => {
    const { prefix, stream } = await freshStream();
    const { schema } = await freshSchema();
    let entered!: () => void;
    const handlerEntered = new Promise<void>((r) => {
      entered = r;
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const consumer = await runConsumer({
      nats,
      prefix,
      durable: "drainer",
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      decode: (d) => d,
      async handle(tx, _body, eventId) {
        entered();
        await gate;
        await countApplication(tx, schema, eventId);
      },
    });
    const id = randomUUID();
    await nats.js.publish(`${prefix}.operations.payout.completed`, text.encode("x"), { msgID: id });
    await handlerEntered;
    let stopped = false;
    const stopping = consumer.stop().then(() => {
      stopped = true;
    });
    // stop() must wait for the handler it interrupted.
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    await stopping;

    expect(await sql`select times from ${sql(schema)}.applied where event_id = ${id}`).toEqual([
      { times: 1 },
    ]);
    await until(
      async () => (await nats.jsm.consumers.info(stream, "drainer")).num_ack_pending,
      (n) => n === 0,
      {
        what: "the ack to reach the server",
      },
    );

    const idle = await runConsumer({
      nats,
      prefix,
      durable: "idle",
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
      decode: (d) => d,
      handle: async () => {},
    });
    await until(
      async () => (await nats.jsm.consumers.info(stream, "idle")).num_pending,
      (n) => n === 0,
      {
        what: "the idle consumer to catch up",
      },
    );
    await idle.stop();
  });
});
