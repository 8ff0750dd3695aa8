import { randomUUID } from "node:crypto";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { createLogger, currentLogContext } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPrefix, until } from "../test-fixtures/helpers.ts";
import { countApplication, createEventSchema } from "../test-fixtures/schema.ts";
import { type RetryPolicy, runConsumer } from "./consumer.ts";
import { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
import { REQUEST_ID_EVENT_HEADER } from "./outbox.ts";

// Events that are already waiting when a consumer pulls are applied together: one
// transaction (one inbox insert, each handler in stream order, one commit) per batch,
// with the dead-letter rule still applied to each event on its own.

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const logger = createLogger("consumer-batches-test", "silent");
const text = new TextEncoder();
/** Three attempts a few milliseconds apart, so a poison event reaches the dead letters quickly. */
const FAST: RetryPolicy = { maxAttempts: 3, baseMs: 20, maxMs: 80 };

let testDb: TestDatabase;
let sql: Sql;
let nats: Nats;
const prefixes: string[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  ({ sql } = connect(testDb.url, { max: 6 }));
  nats = await connectNats(NATS_URL, "consumer-batches-test");
});

afterAll(async () => {
  for (const prefix of prefixes) await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.drain();
  await sql?.end({ timeout: 5 });
  await testDb?.drop();
});

/**
 * A stream and a service schema of their own, plus a `handled` table where the handler
 * writes, inside the consumer's transaction, each event it applied with that
 * transaction's id: rows of a transaction that rolled back vanish with it.
 */
async function fixture() {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  await ensureStream(nats.jsm, prefix);
  const schema = `batch_${randomUUID().slice(0, 8)}`;
  await createEventSchema(sql, schema);
  await sql.unsafe(`create table "${schema}".handled (
    n bigserial primary key, event_id uuid not null, body text not null, txid bigint not null)`);
  const durable = `c_${randomUUID().slice(0, 8)}`;
  /** Publishes one event per body, each awaited, so the stream holds them in this order. */
  const publish = async (bodies: string[]) => {
    const ids: string[] = [];
    for (const body of bodies) {
      const id = randomUUID();
      await nats.js.publish(`${prefix}.operations.payment.completed`, text.encode(body), { msgID: id });
      ids.push(id);
    }
    return ids;
  };
  /** Records the event, its body and the transaction's id in `handled`, and counts it in `applied`. */
  const record = async (tx: postgres.TransactionSql, body: string, eventId: string) => {
    await tx.unsafe(
      `insert into "${schema}".handled (event_id, body, txid) values ($1, $2, txid_current())`,
      [eventId, body],
    );
    await countApplication(tx, schema, eventId);
  };
  const handled = () =>
    sql<{ event_id: string; body: string; txid: string }[]>`
      select event_id, body, txid::text from ${sql(schema)}.handled order by n`;
  const settled = () =>
    until(
      async () => {
        const info = await nats.jsm.consumers.info(streamName(prefix), durable);
        return info.num_pending + info.num_ack_pending;
      },
      (n) => n === 0,
      { what: "every message acked" },
    );
  return { prefix, schema, durable, publish, record, handled, settled };
}

/** Bodies "0", "1", ... "n-1". */
const bodies = (n: number) => Array.from({ length: n }, (_, i) => String(i));

/** How many events each transaction applied, by transaction id. */
const perTransaction = (rows: { txid: string }[]) => {
  const sizes = new Map<string, number>();
  for (const r of rows) sizes.set(r.txid, (sizes.get(r.txid) ?? 0) + 1);
  return sizes;
};

async function histogram(name: string, consumer: string) {
  // A histogram's values name their series (`_count`, `_sum`, `_bucket`).
  const values = ((await metricsRegistry.getSingleMetric(name)?.get())?.values ?? []) as {
    metricName?: string;
    labels: Record<string, unknown>;
    value: number;
  }[];
  const of = (suffix: string) =>
    values.find((v) => v.metricName === `${name}_${suffix}` && v.labels.consumer === consumer)?.value ?? 0;
  return { count: of("count"), sum: of("sum") };
}

describe("a consumer applying events in batches", () => {
  it("applies events published together in fewer transactions than events, each once", async () => {
    const f = await fixture();
    const n = 40;
    const ids = await f.publish(bodies(n));
    const consumer = await runConsumer({
      nats,
      prefix: f.prefix,
      durable: f.durable,
      subjects: ["operations.>"],
      sql,
      schema: f.schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      handle: (tx, body, eventId) => f.record(tx, body, eventId),
    });
    try {
      await f.settled();
    } finally {
      await consumer.stop();
    }
    const rows = await f.handled();
    expect(rows.map((r) => r.event_id)).toEqual(ids);
    const transactions = perTransaction(rows).size;
    // The 40 were waiting before the consumer pulled: they come in one or a few
    // deliveries, never one transaction each.
    expect(transactions).toBeLessThanOrEqual(n / 4);
    const inbox = await sql<{ event_id: string }[]>`select event_id from ${sql(f.schema)}.inbox`;
    expect(inbox.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    // The histogram saw every message, in as many batches as there were transactions.
    expect(await histogram("events_consumer_batch_size", f.durable)).toEqual({
      count: transactions,
      sum: n,
    });
  });

  it("applies a batch's events in stream order, within its bounds: maxBatch, and one at a time with maxAckPending 1", async () => {
    // The bounds, and the most events one transaction may hold under each.
    const cases = [
      { bounds: {}, most: 64 },
      { bounds: { maxBatch: 8 }, most: 8 },
      { bounds: { maxAckPending: 1 }, most: 1 },
    ];
    for (const { bounds, most } of cases) {
      const f = await fixture();
      await f.publish(bodies(30));
      const consumer = await runConsumer({
        nats,
        prefix: f.prefix,
        durable: f.durable,
        subjects: ["operations.>"],
        sql,
        schema: f.schema,
        logger,
        ...bounds,
        decode: (d) => new TextDecoder().decode(d),
        handle: (tx, body, eventId) => f.record(tx, body, eventId),
      });
      try {
        await f.settled();
      } finally {
        await consumer.stop();
      }
      const rows = await f.handled();
      expect(rows.map((r) => r.body)).toEqual(bodies(30));
      const largest = Math.max(...perTransaction(rows).values());
      expect(largest).toBeLessThanOrEqual(most);
      // The 30 were waiting: a bound above one is used.
      if (most > 1) expect(largest).toBeGreaterThan(1);
    }
  });

  it("refuses a maxBatch outside 1 to 64", async () => {
    const f = await fixture();
    for (const maxBatch of [0, 65, 1.5])
      await expect(
        runConsumer({
          nats,
          prefix: f.prefix,
          durable: f.durable,
          subjects: ["operations.>"],
          sql,
          schema: f.schema,
          logger,
          maxBatch,
          decode: (d) => d,
          handle: async () => {},
        }),
      ).rejects.toThrow(/maxBatch/);
  });

  it("applies the good events of a batch once and acks them, while a poison event among them is retried and dead-lettered", async () => {
    const f = await fixture();
    const bodiesInOrder = ["good-1", "good-2", "poison", "good-3", "good-4"];
    const ids = await f.publish(bodiesInOrder);
    const poison = ids[2] as string;
    // Every attempt the handler saw, with its transaction, rolled back or not.
    const attempts: { body: string; txid: string }[] = [];
    const consumer = await runConsumer({
      nats,
      prefix: f.prefix,
      durable: f.durable,
      subjects: ["operations.>"],
      sql,
      schema: f.schema,
      logger,
      retry: FAST,
      decode: (d) => new TextDecoder().decode(d),
      async handle(tx, body, eventId) {
        const [row] = await tx<{ txid: string }[]>`select txid_current()::text as txid`;
        attempts.push({ body, txid: row?.txid ?? "" });
        if (body === "poison") throw new Error("cannot apply this event");
        await f.record(tx, body, eventId);
      },
    });
    try {
      await until(
        async () =>
          (await sql`select 1 from ${sql(f.schema)}.dead_letters where event_id = ${poison}`).length,
        (n) => n === 1,
        { what: "the poison event dead-lettered" },
      );
      await f.settled();
    } finally {
      await consumer.stop();
    }
    // The poison event shared a transaction with good ones at least once: the batch ran.
    const poisonTxids = new Set(attempts.filter((a) => a.body === "poison").map((a) => a.txid));
    expect(attempts.some((a) => a.body !== "poison" && poisonTxids.has(a.txid))).toBe(true);

    const rows = await f.handled();
    expect(rows.map((r) => r.body)).toEqual(["good-1", "good-2", "good-3", "good-4"]);
    const applied = await sql<{ event_id: string; times: number }[]>`
      select event_id, times from ${sql(f.schema)}.applied`;
    expect(new Map(applied.map((r) => [r.event_id, r.times]))).toEqual(
      new Map(ids.filter((id) => id !== poison).map((id) => [id, 1])),
    );
    const [letter] = await sql`select attempts, status from ${sql(f.schema)}.dead_letters`;
    expect(letter).toEqual({ attempts: FAST.maxAttempts, status: "open" });
    expect(await sql`select 1 from ${sql(f.schema)}.inbox where event_id = ${poison}`).toHaveLength(0);
    // Only the poison event came back: the good ones were acked at their first delivery.
    const info = await nats.jsm.consumers.info(streamName(f.prefix), f.durable);
    expect(info.delivered.consumer_seq).toBe(ids.length + FAST.maxAttempts - 1);
  });

  it("logs each event of a batch in its own context: its event id, the request that caused it, its log fields", async () => {
    const f = await fixture();
    const published: { id: string; body: string; requestId: string }[] = [];
    for (const body of ["op-1", "skipped", "op-2"]) {
      const id = randomUUID();
      const requestId = `req-${body}`;
      const h = natsHeaders();
      h.set(REQUEST_ID_EVENT_HEADER, requestId);
      await nats.js.publish(`${f.prefix}.operations.payment.completed`, text.encode(body), {
        msgID: id,
        headers: h,
      });
      published.push({ id, body, requestId });
    }
    // The log context each "event handled" line is written in: what the logger's mixin
    // adds to the line (libs/log).
    const lines: Record<string, unknown>[] = [];
    const debugLogger = createLogger("consumer-batches-test", "debug");
    debugLogger.debug = ((obj: object, msg: string) => {
      lines.push({ ...currentLogContext(), ...obj, msg });
    }) as typeof debugLogger.debug;
    const consumer = await runConsumer({
      nats,
      prefix: f.prefix,
      durable: f.durable,
      subjects: ["operations.>"],
      sql,
      schema: f.schema,
      logger: debugLogger,
      decode: (d) => new TextDecoder().decode(d),
      skip: (body) => body === "skipped",
      logFields: (body) => ({ operation_id: body }),
      handle: (tx, body, eventId) => f.record(tx, body, eventId),
    });
    try {
      await f.settled();
    } finally {
      await consumer.stop();
    }
    expect(Math.max(...perTransaction(await f.handled()).values())).toBe(2);
    const handled = lines.filter((l) => l.msg === "event handled");
    const byEvent = (a: { event_id: unknown }, b: { event_id: unknown }) =>
      String(a.event_id).localeCompare(String(b.event_id));
    expect(
      handled
        .map((l) => ({
          event_id: l.event_id,
          request_id: l.request_id,
          operation_id: l.operation_id,
          outcome: l.outcome,
        }))
        .sort(byEvent),
    ).toEqual(
      published
        .map((p) => ({
          event_id: p.id,
          request_id: p.requestId,
          operation_id: p.body,
          outcome: p.body === "skipped" ? "skipped" : "applied",
        }))
        .sort(byEvent),
    );
  });

  it("applies a lone event at once, without waiting for more", async () => {
    const f = await fixture();
    const consumer = await runConsumer({
      nats,
      prefix: f.prefix,
      durable: f.durable,
      subjects: ["operations.>"],
      sql,
      schema: f.schema,
      logger,
      decode: (d) => new TextDecoder().decode(d),
      handle: (tx, body, eventId) => f.record(tx, body, eventId),
    });
    try {
      // A first event, so the consumer is surely pulling before the one that is timed.
      await f.publish(["warm-up"]);
      await f.settled();
      const started = performance.now();
      await f.publish(["lone"]);
      await until(f.handled, (rows) => rows.length === 2, { everyMs: 2, what: "the lone event applied" });
      // Well under any timer a batcher might wait on; a busy machine still makes it.
      expect(performance.now() - started).toBeLessThan(250);
    } finally {
      await consumer.stop();
    }
  });
});
