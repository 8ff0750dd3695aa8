import { AckPolicy, type ConsumerMessages, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import type postgres from "postgres";
import { type Nats, streamName } from "./nats.ts";

export interface ConsumerOptions<T> {
  nats: Nats;
  prefix: string;
  /** Durable consumer name; also the key of this consumer's rows in the inbox. */
  durable: string;
  /** Subjects without the prefix, for example ["operations.>"]. */
  subjects: string[];
  sql: Sql;
  /** The consuming service's schema, holding its `inbox` table. */
  schema: string;
  decode: (data: Uint8Array) => T;
  /** Applies the event inside the transaction that also records it in the inbox. */
  handle: (tx: postgres.TransactionSql, event: T, eventId: string) => Promise<void>;
  logger: Logger;
}

export interface RunningConsumer {
  /** Stops pulling, finishes the message in hand, and returns. */
  stop(): Promise<void>;
}

/**
 * Runs a durable JetStream pull consumer whose effects are exactly-once: the event id
 * goes into the service's inbox in the same Postgres transaction as the effect, and the
 * message is acked only after that transaction commits. A crash before the commit means
 * redelivery and a clean retry; a crash after it means redelivery and a no-op.
 */
export async function runConsumer<T>(options: ConsumerOptions<T>): Promise<RunningConsumer> {
  const { nats, prefix, durable, sql, schema, logger } = options;
  const stream = streamName(prefix);
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subjects: options.subjects.map((s) => `${prefix}.${s}`),
    ack_wait: nanos(30_000),
    max_ack_pending: 1000,
    max_deliver: -1,
  };
  try {
    await nats.jsm.consumers.add(stream, config);
  } catch {
    await nats.jsm.consumers.update(stream, durable, config);
  }
  const consumer = await nats.js.consumers.get(stream, durable);
  let messages: ConsumerMessages | undefined;
  let stopped = false;

  const processOne = async (m: JsMsg) => {
    const eventId = m.headers?.get("Nats-Msg-Id") || `${m.info.stream}:${m.seq}`;
    try {
      const event = options.decode(m.data);
      await sql.begin(async (tx) => {
        const inserted = await tx`
          insert into ${sql(schema)}.inbox (consumer, event_id) values (${durable}, ${eventId})
          on conflict do nothing returning 1`;
        if (inserted.length > 0) await options.handle(tx, event, eventId);
      });
      m.ack();
    } catch (err) {
      // Redeliver later with a growing delay (capped at 30 s); the inbox makes the retry safe.
      const delayMs = Math.min(30_000, 200 * 2 ** Math.min(m.info.deliveryCount, 8));
      logger.error({ err, eventId, subject: m.subject, delivery: m.info.deliveryCount }, "event handler failed");
      m.nak(delayMs);
    }
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        messages = await consumer.consume({ max_messages: 64 });
        for await (const m of messages) {
          await processOne(m);
          if (stopped) break;
        }
      } catch (err) {
        if (!stopped) logger.warn({ err, durable }, "consumer interrupted; resubscribing");
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();

  return {
    async stop() {
      stopped = true;
      await messages?.close();
      await loop;
    },
  };
}
