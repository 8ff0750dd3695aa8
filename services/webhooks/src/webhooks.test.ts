import { randomBytes, randomUUID } from "node:crypto";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { connectNats, type Nats, streamName } from "@gw/events";
import { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { Code, ConnectError, createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebhooks } from "./app.ts";
import { configSchema } from "./config.ts";
import { operationEvent, publishEvent, startReceiver, waitFor } from "./test-support.ts";

// Short retries so that "down for hours" fits in a few seconds: 11 attempts over ~7 s.
const SCHEDULE = [100, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000];

let db: TestDatabase;
let sql: Sql;
let nats: Nats;
let service: RunningService;
let config: ReturnType<typeof configSchema.parse>;
let client: ReturnType<typeof createServiceClient<typeof WebhooksService>>;
const prefix = `t_${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  db = await createTestDatabase();
  config = configSchema.parse({
    DATABASE_URL: db.url,
    EVENTS_PREFIX: prefix,
    GRPC_PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE.join(","),
    WEBHOOK_POLL_MS: "50",
  });
  service = await startWebhooks(config);
  client = createServiceClient(WebhooksService, `http://127.0.0.1:${service.port}`);
  nats = await connectNats("nats://127.0.0.1:4222", "webhooks-test");
  ({ sql } = connect(db.url, { max: 2 }));
});

afterAll(async () => {
  await service?.stop();
  await sql?.end();
  await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.close();
  await db?.drop();
});

/** A new shop whose endpoint is the given receiver; returns the shop id and its secret. */
async function shopWithEndpoint(url: string) {
  const shopId = randomUUID();
  const { secret } = await client.putEndpoint({ shopId, url });
  if (!secret) throw new Error("a new endpoint must come with a secret");
  return { shopId, secret };
}

const deliveryOf = async (shopId: string, eventId: string) =>
  (await client.listDeliveries({ shopId, limit: 200 })).deliveries.find((d) => d.eventId === eventId);

const inboxed = async (ids: string[]) => {
  const rows = await sql`select count(*)::int as n from webhooks.inbox where event_id = any(${ids}::uuid[])`;
  return rows[0]!.n === ids.length;
};

describe("webhooks service", () => {
  it("delivers an operation event to the shop's endpoint, signed per Standard Webhooks", async () => {
    const receiver = await startReceiver();
    const { shopId, secret } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payment.completed", receipts: [{ amount: "1500.00" }] });
    await publishEvent(nats, prefix, event);

    await waitFor(() => receiver.received.length >= 1);
    const [hit] = receiver.received;
    const body = new Webhook(secret).verify(hit!.body, hit!.headers) as Record<string, unknown>;
    expect(hit!.headers["webhook-id"]).toBe(event.eventId);
    expect(hit!.headers["content-type"]).toBe("application/json");
    expect(body).toMatchObject({
      id: event.eventId,
      type: "payment.completed",
      created_at: event.occurredAt,
      data: {
        operation_id: event.operation!.operationId,
        status: "completed",
        actual_amount: "1500.00",
        receipt_evidence_status: "complete",
        receipts: [{ amount: 1500 }],
      },
    });
    await receiver.down();
  });

  it("makes one delivery of an event that reaches the consumer twice", async () => {
    const receiver = await startReceiver();
    const { shopId } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payout.completed" });
    // The second copy carries another message id, as a republish past the stream's
    // duplicate window would look to JetStream: only the event id can tell them apart.
    const secondMsgId = randomUUID();
    await publishEvent(nats, prefix, event);
    await publishEvent(nats, prefix, event, secondMsgId);

    await waitFor(() => inboxed([event.eventId, secondMsgId]));
    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.status === "delivered");
    expect(receiver.received).toHaveLength(1);
    const deliveries = (await client.listDeliveries({ shopId, limit: 10 })).deliveries;
    expect(deliveries.map((d) => [d.eventId, d.status, d.attempts])).toEqual([
      [event.eventId, "delivered", 1],
    ]);
    await receiver.down();
  });

  it("delivers only the event types merchants receive", async () => {
    const receiver = await startReceiver();
    const { shopId } = await shopWithEndpoint(receiver.url);
    const operationId = randomUUID();
    const pending = operationEvent({ shopId, operationId, version: 1, type: "payment.pending" });
    const waiting = operationEvent({
      shopId,
      operationId,
      version: 2,
      type: "payment.awaiting_confirmation",
    });
    await publishEvent(nats, prefix, pending);
    await publishEvent(nats, prefix, waiting);

    await waitFor(() => receiver.received.length >= 1);
    // Applied in stream order: once the later event is in, the pending one was passed
    // over, never handed to the consumer (no inbox row, no transaction).
    await waitFor(() => inboxed([waiting.eventId]));
    expect(await inboxed([pending.eventId])).toBe(false);
    const body = JSON.parse(receiver.received[0]!.body);
    expect(body.type).toBe("payment.awaiting_confirmation");
    expect(body.data.receipt_evidence_status).toBe("not_ready");
    expect((await client.listDeliveries({ shopId, limit: 10 })).deliveries.map((d) => d.eventType)).toEqual([
      "payment.awaiting_confirmation",
    ]);
    await receiver.down();
  });

  it("retries a receiver that answers 500 and delivers later with the same webhook-id", async () => {
    const receiver = await startReceiver((n) => (n <= 2 ? 500 : 204));
    const { shopId, secret } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payment.rejected" });
    await publishEvent(nats, prefix, event);

    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.status === "delivered");
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([
      event.eventId,
      event.eventId,
      event.eventId,
    ]);
    const last = receiver.received[2]!;
    expect(() => new Webhook(secret).verify(last.body, last.headers)).not.toThrow();
    expect(receiver.received.every((r) => r.body === last.body)).toBe(true);
    const delivery = await deliveryOf(shopId, event.eventId);
    expect(delivery).toMatchObject({ attempts: 3, lastStatusCode: 204 });
    expect(delivery?.lastError).toBeUndefined();
    await receiver.down();
  });

  it("delivers every event, in version order per operation, to a receiver that comes back after a long outage", async () => {
    const receiver = await startReceiver();
    const { shopId } = await shopWithEndpoint(receiver.url);
    await receiver.down();
    const a = randomUUID();
    const b = randomUUID();
    const events = [
      operationEvent({ shopId, operationId: a, version: 1, type: "payment.awaiting_confirmation" }),
      operationEvent({ shopId, operationId: b, version: 1, type: "payment.awaiting_confirmation" }),
      operationEvent({ shopId, operationId: a, version: 2, type: "payment.manual_check" }),
      operationEvent({ shopId, operationId: b, version: 2, type: "payment.cancelled" }),
      operationEvent({ shopId, operationId: a, version: 3, type: "payment.completed" }),
    ];
    for (const e of events) await publishEvent(nats, prefix, e);

    // Down through most of the schedule: the first versions fail again and again ...
    await waitFor(async () => {
      const rows = await sql`
        select min(attempts)::int as n from webhooks.deliveries where shop_id = ${shopId} and operation_version = 1`;
      return rows[0]!.n >= 5;
    });
    // ... while the later versions of the same operations wait their turn untried.
    const later = await sql`
      select attempts, status from webhooks.deliveries where shop_id = ${shopId} and operation_version > 1`;
    expect(later).toHaveLength(3);
    expect(later.every((r) => r.attempts === 0 && r.status === "pending")).toBe(true);

    await receiver.up();
    await waitFor(() => receiver.received.length >= events.length, 20_000);
    const got = receiver.received.map(
      (r) => JSON.parse(r.body) as { id: string; data: { operation_id: string } },
    );
    expect(got.map((g) => g.id).sort()).toEqual(events.map((e) => e.eventId).sort());
    const order = (op: string) => got.filter((g) => g.data.operation_id === op).map((g) => g.id);
    expect(order(a)).toEqual([events[0]!.eventId, events[2]!.eventId, events[4]!.eventId]);
    expect(order(b)).toEqual([events[1]!.eventId, events[3]!.eventId]);
    await waitFor(async () =>
      (await client.listDeliveries({ shopId, limit: 10 })).deliveries.every((d) => d.status === "delivered"),
    );
    expect(receiver.received).toHaveLength(events.length);
    await receiver.down();
  });

  it("marks a delivery failed once the retry schedule is used up, and redelivers it on request", async () => {
    const receiver = await startReceiver(() => 410);
    const { shopId, secret } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payout.rejected" });
    await publishEvent(nats, prefix, event);

    const failed = await waitFor(async () => {
      const d = await deliveryOf(shopId, event.eventId);
      return d?.status === "failed" ? d : undefined;
    }, 25_000);
    expect(failed).toMatchObject({
      attempts: SCHEDULE.length + 1,
      lastStatusCode: 410,
      lastError: "HTTP 410",
    });
    expect(failed.nextAttemptAt).toBeUndefined();

    receiver.setRespond(() => 200);
    await client.redeliver({ shopId, eventId: event.eventId });
    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.status === "delivered");
    const last = receiver.received.at(-1)!;
    expect(last.headers["webhook-id"]).toBe(event.eventId);
    expect(() => new Webhook(secret).verify(last.body, last.headers)).not.toThrow();
    await receiver.down();
  }, 40_000);

  it("redelivers a delivered event on request, and answers NOT_FOUND for another shop's event", async () => {
    const receiver = await startReceiver();
    const { shopId } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payment.completed" });
    await publishEvent(nats, prefix, event);
    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.status === "delivered");

    await client.redeliver({ shopId, eventId: event.eventId });
    await waitFor(() => receiver.received.length >= 2);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([event.eventId, event.eventId]);
    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.attempts === 2);

    const other = randomUUID();
    const err = await client.redeliver({ shopId: other, eventId: event.eventId }).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.NotFound);
    await receiver.down();
  });

  it("does not start a second attempt when a redelivery is asked for during one", async () => {
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const receiver = await startReceiver(async () => {
      await held;
      return 200;
    });
    const { shopId } = await shopWithEndpoint(receiver.url);
    const event = operationEvent({ shopId, type: "payout.completed" });
    await publishEvent(nats, prefix, event);
    await waitFor(() => receiver.received.length >= 1);

    await client.redeliver({ shopId, eventId: event.eventId });
    // Absence cannot be awaited: give the worker several poll intervals to misbehave.
    await new Promise((r) => setTimeout(r, 400));
    expect(receiver.received).toHaveLength(1);
    release();
    await waitFor(async () => (await deliveryOf(shopId, event.eventId))?.status === "delivered");
    expect(receiver.received).toHaveLength(1);
    await receiver.down();
  });

  it("records an event for a shop without an endpoint as failed, and delivers it once one is set", async () => {
    const shopId = randomUUID();
    const event = operationEvent({ shopId, type: "payment.completed" });
    await publishEvent(nats, prefix, event);
    const failed = await waitFor(() => deliveryOf(shopId, event.eventId));
    expect(failed).toMatchObject({ status: "failed", lastError: "no endpoint configured", attempts: 0 });

    const receiver = await startReceiver();
    const { secret } = await client.putEndpoint({ shopId, url: receiver.url });
    await client.redeliver({ shopId, eventId: event.eventId });
    await waitFor(() => receiver.received.length >= 1);
    const hit = receiver.received[0]!;
    expect(() => new Webhook(secret!).verify(hit.body, hit.headers)).not.toThrow();
    await receiver.down();
  });

  it("returns the secret only for a new endpoint, and a new one on rotation that signs from then on", async () => {
    const receiver = await startReceiver();
    const { shopId, secret } = await shopWithEndpoint(receiver.url);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await client.putEndpoint({ shopId, url: `${receiver.url}?v=2` })).secret).toBeUndefined();

    const { secret: rotated } = await client.rotateSecret({ shopId });
    expect(rotated).not.toBe(secret);
    const event = operationEvent({ shopId, type: "payment.completed" });
    await publishEvent(nats, prefix, event);
    await waitFor(() => receiver.received.length >= 1);
    const hit = receiver.received[0]!;
    // During the grace period both the new and the previous secret verify.
    expect(() => new Webhook(rotated).verify(hit.body, hit.headers)).not.toThrow();
    expect(() => new Webhook(secret).verify(hit.body, hit.headers)).not.toThrow();

    const missing = await client.rotateSecret({ shopId: randomUUID() }).catch((e: unknown) => e);
    expect(ConnectError.from(missing).code).toBe(Code.NotFound);
    await receiver.down();
  });

  it("shares the work between replicas and sends each event once", async () => {
    const second = await startWebhooks(config);
    try {
      const receiver = await startReceiver();
      const { shopId } = await shopWithEndpoint(receiver.url);
      const ops = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const events = Array.from({ length: 24 }, (_, i) =>
        operationEvent({ shopId, operationId: ops[i % ops.length], version: Math.floor(i / ops.length) + 1 }),
      );
      for (const e of events) await publishEvent(nats, prefix, e);

      await waitFor(async () => {
        const rows = await sql`
          select count(*)::int as n from webhooks.deliveries where shop_id = ${shopId} and status = 'delivered'`;
        return rows[0]!.n === events.length;
      });
      const ids = receiver.received.map((r) => r.headers["webhook-id"]);
      expect(ids).toHaveLength(events.length);
      expect(new Set(ids).size).toBe(events.length);
      // Every operation got all its events; the order across two consumers is not
      // asserted here (see the README: events taken by two replicas at once can be
      // recorded out of order), only that nothing was lost or doubled.
      const bodies = receiver.received.map(
        (r) => JSON.parse(r.body) as { id: string; data: { operation_id: string } },
      );
      for (const op of ops) {
        const arrived = bodies.filter((b) => b.data.operation_id === op).map((b) => b.id);
        const published = events.filter((e) => e.operation!.operationId === op).map((e) => e.eventId);
        expect(arrived.sort()).toEqual(published.sort());
      }
      await receiver.down();
    } finally {
      await second.stop();
    }
  });

  it("refuses a list limit above 200", async () => {
    const err = await client.listDeliveries({ shopId: randomUUID(), limit: 201 }).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
  });

  it("counts deliveries by outcome and their lag in metrics", async () => {
    const res = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
    const text = await res.text();
    expect(text).toMatch(/webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
    expect(text).toMatch(/webhook_deliveries_total\{outcome="retrying"\} [1-9]/);
    expect(text).toMatch(/webhook_delivery_lag_seconds_count [1-9]/);
  });
});
