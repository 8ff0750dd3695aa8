import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { createLogger } from "@gw/log";
import { GetEventHealthRequestSchema } from "@gw/proto/gateway/events/v1/event_health_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPrefix, until } from "../test-fixtures/helpers.ts";
import { countApplication, createEventSchema } from "../test-fixtures/schema.ts";
import { runConsumer } from "./consumer.ts";
import { EventHealthHandlers } from "./event-health.ts";
import { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";

// Event health on real Postgres and JetStream: an unpublished outbox row and events a
// durable consumer has not applied yet are counted, and nothing once it has.

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const logger = createLogger("event-health-test", "silent");

let testDb: TestDatabase;
let sql: Sql;
let nats: Nats;
const prefix = randomPrefix();

beforeAll(async () => {
  testDb = await createTestDatabase();
  ({ sql } = connect(testDb.url, { max: 4 }));
  nats = await connectNats(NATS_URL, "event-health-test");
  await ensureStream(nats.jsm, prefix);
});

afterAll(async () => {
  await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.drain();
  await sql?.end({ timeout: 5 });
  await testDb?.drop();
});

describe("EventHealthHandlers", () => {
  it("counts unpublished outbox rows and the events a consumer has not applied, until it has", async () => {
    const schema = `svc_${randomUUID().slice(0, 8)}`;
    await createEventSchema(sql, schema);
    const published = randomUUID();
    const unpublished = randomUUID();
    await sql`insert into ${sql(schema)}.outbox (id, subject, payload, published_at)
              values (${published}, 'operations.payment.completed', '\\x00', now()),
                     (${unpublished}, 'operations.payment.completed', '\\x00', null)`;
    const durable = `consumer_${randomUUID().slice(0, 8)}`;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const consumer = await runConsumer({
      durable,
      decode: (d) => d,
      async handle(tx, _body, eventId) {
        await gate;
        await countApplication(tx, schema, eventId);
      },
      nats,
      prefix,
      subjects: ["operations.>"],
      sql,
      schema,
      logger,
    });
    try {
      for (let i = 0; i < 3; i++)
        await nats.js.publish(`${prefix}.operations.payment.completed`, new Uint8Array([i]), {
          msgID: randomUUID(),
        });
      const handlers = new EventHealthHandlers({
        service: "svc",
        sql,
        outboxSchema: schema,
        nats,
        prefix,
        durables: [durable],
      });
      const health = () => handlers.getEventHealth(create(GetEventHealthRequestSchema, {}));
      const before = await health();
      expect(before.outboxTotal).toBe(2n);
      expect(before.outboxUnpublished).toBe(1n);
      expect(before.unpublishedEventIds).toEqual([unpublished]);
      expect(before.consumers.map((c) => [c.durable, c.pending + c.ackPending])).toEqual([[durable, 3n]]);

      release();
      const after = await until(
        health,
        (h) => h.consumers[0]?.pending === 0n && h.consumers[0]?.ackPending === 0n,
        {
          what: "the consumer to apply the three events",
        },
      );
      expect(after.consumers[0]?.delivered).toBe(3n);
    } finally {
      await consumer.stop();
    }
  });

  it("answers a service without an outbox with its consumers only", async () => {
    const handlers = new EventHealthHandlers({ service: "matching", sql, nats, prefix, durables: [] });
    const h = await handlers.getEventHealth(create(GetEventHealthRequestSchema, {}));
    expect([h.hasOutbox, h.outboxTotal, h.consumers]).toEqual([false, 0n, []]);
  });
});
