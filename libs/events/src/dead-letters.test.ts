import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { createLogger } from "@gw/log";
import { errorInfo, metricsRegistry } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPrefix, until } from "../test-fixtures/helpers.ts";
import { countApplication, createEventSchema } from "../test-fixtures/schema.ts";
import { type RetryPolicy, retryDelayMs, runConsumer } from "./consumer.ts";
import { DeadLetterHandlers } from "./dead-letter-service.ts";
import type { EventApplier } from "./dead-letters.ts";
import { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const logger = createLogger("dead-letters-test", "silent");
const text = new TextEncoder();
/** Three attempts a few milliseconds apart, so a poison event reaches the table quickly. */
const FAST: RetryPolicy = { maxAttempts: 3, baseMs: 20, maxMs: 80 };

let testDb: TestDatabase;
let sql: Sql;
let nats: Nats;
const prefixes: string[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  ({ sql } = connect(testDb.url, { max: 6 }));
  nats = await connectNats(NATS_URL, "dead-letters-test");
});

afterAll(async () => {
  for (const prefix of prefixes) await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.drain();
  await sql?.end({ timeout: 5 });
  await testDb?.drop();
});

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metricsRegistry.getSingleMetric(name)?.get())?.values ?? [];
  const found = metric.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value ?? 0;
}

/**
 * A consumer whose handler counts each event in `applied` and refuses any event whose
 * body is "poison" while `broken.value` is true; the same applier serves the retries.
 */
async function poisonedConsumer(maxAckPending?: number) {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  await ensureStream(nats.jsm, prefix);
  const schema = `svc_${randomUUID().slice(0, 8)}`;
  await createEventSchema(sql, schema);
  const durable = `consumer_${randomUUID().slice(0, 8)}`;
  const broken = { value: true };
  const applier: EventApplier<string> = {
    durable,
    decode: (d) => new TextDecoder().decode(d),
    async handle(tx, body, eventId) {
      if (body === "poison" && broken.value) throw new Error("cannot apply this event");
      await countApplication(tx, schema, eventId);
    },
  };
  const consumer = await runConsumer({
    ...applier,
    nats,
    prefix,
    subjects: ["operations.>"],
    sql,
    schema,
    logger,
    retry: FAST,
    ...(maxAckPending === undefined ? {} : { maxAckPending }),
  });
  const publish = async (body: string) => {
    const id = randomUUID();
    await nats.js.publish(`${prefix}.operations.payment.completed`, text.encode(body), { msgID: id });
    return id;
  };
  const handlers = new DeadLetterHandlers({ service: "svc", sql, schema, consumers: [applier] });
  const applied = async (eventId: string) =>
    ((await sql`select times from ${sql(schema)}.applied where event_id = ${eventId}`)[0]?.times as number) ??
    0;
  return { prefix, schema, durable, broken, consumer, publish, handlers, applied };
}

const failureOf = async (promise: Promise<unknown>) => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return { code: (err as ConnectError).code, publicCode: errorInfo(err)?.code };
};

describe("retryDelayMs", () => {
  it("doubles the delay with every attempt up to the maximum", () => {
    const policy = { maxAttempts: 10, baseMs: 1_000, maxMs: 5_000 };
    expect([1, 2, 3, 4, 5, 60].map((n) => retryDelayMs(policy, n))).toEqual([
      1_000, 2_000, 4_000, 5_000, 5_000, 5_000,
    ]);
  });
});

describe("dead letters", () => {
  it("records a poison event after its last attempt and acks it, while the events behind it are applied", async () => {
    // One message in flight at a time: without the dead letter, the poison event would hold up the stream.
    const c = await poisonedConsumer(1);
    try {
      const before = await metricValue("events_dead_lettered_total", { consumer: c.durable });
      const poison = await c.publish("poison");
      const later = [await c.publish("good-1"), await c.publish("good-2")];

      await until(
        async () => Promise.all(later.map(c.applied)),
        (counts) => counts.every((n) => n === 1),
        { what: "the events behind the poison event applied" },
      );
      const [row] = await sql`select * from ${sql(c.schema)}.dead_letters where event_id = ${poison}`;
      expect(row).toMatchObject({
        consumer: c.durable,
        subject: "operations.payment.completed",
        attempts: FAST.maxAttempts,
        status: "open",
      });
      expect(row?.error).toContain("cannot apply this event");
      expect(new TextDecoder().decode(row?.payload as Uint8Array)).toBe("poison");
      expect(await c.applied(poison)).toBe(0);
      expect(await sql`select 1 from ${sql(c.schema)}.inbox where event_id = ${poison}`).toHaveLength(0);

      // Acked: nothing of the stream is pending or waiting for an ack.
      const info = await nats.jsm.consumers.info(streamName(c.prefix), c.durable);
      expect(info.num_ack_pending).toBe(0);
      expect(info.num_pending).toBe(0);
      expect(await metricValue("events_dead_lettered_total", { consumer: c.durable })).toBe(before + 1);
      expect(await metricValue("dead_letters_open", { schema: c.schema, consumer: c.durable })).toBe(1);

      const listed = await c.handlers.listDeadLetters({ status: "open", limit: 0 } as never);
      expect(
        listed.deadLetters.map((d) => ({ service: d.service, eventId: d.eventId, status: d.status })),
      ).toEqual([{ service: "svc", eventId: poison, status: "open" }]);
    } finally {
      await c.consumer.stop();
    }
  });

  it("re-applies a dead letter once when an operator retries it after the fix, and never twice", async () => {
    const c = await poisonedConsumer();
    try {
      const poison = await c.publish("poison");
      await until(
        async () =>
          (await sql`select status from ${sql(c.schema)}.dead_letters where event_id = ${poison}`).length,
        (n) => n === 1,
        { what: "the dead letter" },
      );
      const key = { consumer: c.durable, eventId: poison, operator: "alice" } as never;

      // Still broken: the retry fails, the row stays open with one more attempt.
      expect(await failureOf(c.handlers.retryDeadLetter(key))).toEqual({
        code: Code.FailedPrecondition,
        publicCode: "dead_letter_retry_failed",
      });
      const [again] =
        await sql`select attempts, status from ${sql(c.schema)}.dead_letters where event_id = ${poison}`;
      expect(again).toEqual({ attempts: FAST.maxAttempts + 1, status: "open" });
      expect(await c.applied(poison)).toBe(0);

      c.broken.value = false;
      const { deadLetter } = await c.handlers.retryDeadLetter(key);
      expect(deadLetter).toMatchObject({ status: "retried", resolvedBy: "alice" });
      expect(await c.applied(poison)).toBe(1);
      expect(await sql`select 1 from ${sql(c.schema)}.inbox where event_id = ${poison}`).toHaveLength(1);

      expect(await failureOf(c.handlers.retryDeadLetter(key))).toEqual({
        code: Code.FailedPrecondition,
        publicCode: "dead_letter_resolved",
      });
      expect(await c.applied(poison)).toBe(1);
      expect(await metricValue("dead_letters_open", { schema: c.schema, consumer: c.durable })).toBe(0);
    } finally {
      await c.consumer.stop();
    }
  });

  it("discards a dead letter with the operator's reason and applies nothing", async () => {
    const c = await poisonedConsumer();
    try {
      const poison = await c.publish("poison");
      await until(
        async () =>
          (await sql`select 1 from ${sql(c.schema)}.dead_letters where event_id = ${poison}`).length,
        (n) => n === 1,
        { what: "the dead letter" },
      );
      const key = { consumer: c.durable, eventId: poison, operator: "bob" };
      expect(await failureOf(c.handlers.discardDeadLetter({ ...key, reason: " " } as never))).toEqual({
        code: Code.InvalidArgument,
        publicCode: "validation_failed",
      });
      const { deadLetter } = await c.handlers.discardDeadLetter({
        ...key,
        reason: "duplicate of a test event",
      } as never);
      expect(deadLetter).toMatchObject({
        status: "discarded",
        resolvedBy: "bob",
        resolutionReason: "duplicate of a test event",
      });
      c.broken.value = false;
      expect(await failureOf(c.handlers.retryDeadLetter({ ...key } as never))).toEqual({
        code: Code.FailedPrecondition,
        publicCode: "dead_letter_resolved",
      });
      expect(await c.applied(poison)).toBe(0);
    } finally {
      await c.consumer.stop();
    }
  });

  it("answers not found for an unknown dead letter or consumer", async () => {
    const c = await poisonedConsumer();
    try {
      for (const consumer of [c.durable, "someone-else"]) {
        expect(
          await failureOf(
            c.handlers.retryDeadLetter({ consumer, eventId: randomUUID(), operator: "x" } as never),
          ),
        ).toEqual({ code: Code.NotFound, publicCode: "dead_letter_not_found" });
      }
    } finally {
      await c.consumer.stop();
    }
  });
});
