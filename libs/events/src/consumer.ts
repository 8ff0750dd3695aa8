import type { Sql } from "@gw/db";
import { addLogContext, type LogContext, type Logger } from "@gw/log";
import { inSpan } from "@gw/rpc";
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  type ConsumerUpdateConfig,
  DeliverPolicy,
  JetStreamApiError,
  type JsMsg,
} from "@nats-io/jetstream";
import { type MsgHdrs, nanos } from "@nats-io/transport-node";
import { propagation, ROOT_CONTEXT, SpanKind, type TextMapGetter } from "@opentelemetry/api";
import type postgres from "postgres";
import { validate as isUuid, v5 as uuidv5 } from "uuid";
import { errorText, recordDeadLetter, watchDeadLetters } from "./dead-letters.ts";
import { eventsConsumed, eventsDeadLettered } from "./metrics.ts";
import { type Nats, streamName } from "./nats.ts";
import { REQUEST_ID_EVENT_HEADER } from "./outbox.ts";
import { subjectMatches } from "./subscriptions.ts";

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
  /**
   * Whether the event is acked as it is, without a transaction or an inbox row: only for
   * events `handle` provably does nothing with, decided from the event alone, since a
   * skipped event is never applied.
   */
  skip?: (event: T) => boolean;
  logger: Logger;
  /**
   * How long JetStream waits for an ack before it redelivers a message, in milliseconds
   * (default 30 s). A consumer killed mid-batch gets its messages back after this long.
   */
  ackWaitMs?: number;
  /**
   * Messages handed out and not yet acked, across every replica of the consumer. 1 makes
   * the consumer apply events strictly in stream order even with several replicas, at
   * the price of one transaction at a time.
   */
  maxAckPending?: number;
  /** Log fields an event names (its shop, its operation), added to every line its handling logs. */
  logFields?: (event: T) => LogContext;
  /** When an event goes to the dead letters: how often it is tried, and the backoff between tries. */
  retry?: RetryPolicy;
}

/**
 * How a consumer retries an event it cannot apply: `maxAttempts` deliveries in all, the
 * n-th redelivery after `baseMs × 2^(n-1)` (at most `maxMs`); after the last failed
 * attempt the event is recorded in the service's `dead_letters` table and acked.
 */
export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}

/**
 * The default: 10 attempts over about 13 minutes (1 s, 2 s, ... 256 s, then 5 min), long
 * enough to ride out a dependency's restart, short enough that an event that can never
 * be applied reaches an operator the same hour.
 */
export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 10, baseMs: 1_000, maxMs: 300_000 };

/** The delay before redelivering an event that failed its `attempt`-th delivery. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  // The exponent is bounded so the arithmetic never overflows, whatever the attempt count.
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}

export interface RunningConsumer {
  /** Stops pulling, finishes the message in hand, and returns. */
  stop(): Promise<void>;
}

/** Messages pulled ahead of the one being handled. Bounded so a slow handler never holds many past their ack wait. */
const PULL_BATCH = 64;

/** A fixed namespace for the ids of messages that came without a Nats-Msg-Id. */
const SEQUENCE_ID_NAMESPACE = "0b0f3c7e-5d4a-4c55-9d7a-2f6f2d8a1c01";

/**
 * The inbox key of a message: its Nats-Msg-Id, which our relays set to the event's
 * UUID. A message published without one (or with one that is not a UUID, which the
 * inbox column could never hold) gets a UUID derived from its stream sequence, so it is
 * still applied once instead of failing forever.
 */
function eventIdOf(m: JsMsg): string {
  const id = m.headers?.get("Nats-Msg-Id");
  if (id && isUuid(id)) return id;
  return uuidv5(`${m.info.stream}:${m.seq}`, SEQUENCE_ID_NAMESPACE);
}

/** Whether the server takes several filter subjects on one consumer (nats-server 2.10 and later). */
function supportsFilterSubjects(nats: Nats): boolean {
  const [major = 0, minor = 0] = (nats.nc.info?.version ?? "0.0").split(".").map(Number);
  return major > 2 || (major === 2 && minor >= 10);
}

/** The narrowest single filter that covers every one of `filters` (their common tokens, then `>`). */
export function coveringFilter(filters: readonly string[]): string {
  const split = filters.map((f) => f.split("."));
  const common: string[] = [];
  for (let i = 0; ; i++) {
    const token = split[0]?.[i];
    // The last token of a filter cannot be shared: `a.b` and `a.b.c` need `a.>`.
    if (token === undefined || token === "*" || token === ">") break;
    if (!split.every((t) => t[i] === token && t.length > i + 1)) break;
    common.push(token);
  }
  return [...common, ">"].join(".");
}

/**
 * A consumer's configuration as an update: the durable name and the deliver policy are
 * fixed at creation and left out, and the filter form it does not use is cleared, since
 * the client merges the update into the consumer's current configuration and the server
 * refuses one that holds both `filter_subject` and `filter_subjects`.
 */
function configUpdate(config: Partial<ConsumerConfig>): ConsumerUpdateConfig {
  const { durable_name: _name, deliver_policy: _policy, ...rest } = config;
  return config.filter_subjects === undefined
    ? { ...rest, filter_subjects: undefined }
    : { ...rest, filter_subject: undefined };
}

/** Reads W3C trace headers from NATS message headers. */
const natsHeadersGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (carrier) => (carrier === undefined ? [] : carrier.keys()),
  get: (carrier, key) => (carrier?.has(key) ? carrier.get(key) : undefined),
};

/**
 * Runs a durable JetStream pull consumer whose effects are exactly-once: the event id
 * goes into the service's inbox in the same Postgres transaction as the effect, and the
 * message is acked only after that transaction commits. A crash before the commit means
 * redelivery and a clean retry; a crash after it means redelivery and a no-op.
 */
export async function runConsumer<T>(options: ConsumerOptions<T>): Promise<RunningConsumer> {
  const { nats, prefix, durable, sql, schema, logger } = options;
  const retry = options.retry ?? DEFAULT_RETRY;
  if (!(retry.maxAttempts >= 1) || !(retry.baseMs >= 0) || !(retry.maxMs >= retry.baseMs)) {
    throw new Error(`consumer ${durable}: invalid retry policy ${JSON.stringify(retry)}`);
  }
  const stream = streamName(prefix);
  const filters = options.subjects.map((s) => `${prefix}.${s}`);
  // One subject goes in `filter_subject`, which every server accepts; several need
  // `filter_subjects`, which needs nats-server 2.10 (the client refuses it before). An
  // older server gets the narrowest single filter that covers them all, and the
  // messages outside the list are acked here without a transaction.
  const serverFilters =
    filters.length === 1 || supportsFilterSubjects(nats) ? filters : [coveringFilter(filters)];
  const outsideList =
    serverFilters.length === filters.length
      ? undefined
      : (subject: string) => !filters.some((f) => subjectMatches(f, subject));
  const config: Partial<ConsumerConfig> = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs ?? 30_000),
    max_ack_pending: options.maxAckPending ?? 1000,
    max_deliver: -1,
    ...(serverFilters.length === 1
      ? { filter_subject: serverFilters[0] }
      : { filter_subjects: serverFilters }),
  };
  try {
    await nats.jsm.consumers.add(stream, config);
  } catch (err) {
    // The durable exists with another configuration (an older version of this service,
    // for example one that read more subjects): it is updated in place, keeping its
    // position in the stream. Anything else (no stream, no connection) is a real failure.
    if (!(err instanceof JetStreamApiError)) throw err;
    await nats.jsm.consumers.update(stream, durable, configUpdate(config));
  }
  const consumer = await nats.js.consumers.get(stream, durable);
  let messages: ConsumerMessages | undefined;
  let stopped = false;
  let wakeFromPause: (() => void) | undefined;

  // Each message is handled in a CONSUMER span that continues the trace of the change
  // that wrote the event (the `traceparent` the outbox stored), with the event id and
  // the request id in the log context.
  const processOne = (m: JsMsg) => {
    if (outsideList?.(m.subject)) {
      m.ack();
      eventsConsumed.inc({ consumer: durable, outcome: "not_subscribed" });
      return;
    }
    const eventId = eventIdOf(m);
    const requestId = m.headers?.has(REQUEST_ID_EVENT_HEADER) ? m.headers.get(REQUEST_ID_EVENT_HEADER) : "";
    return inSpan(
      `${m.subject.slice(prefix.length + 1)} process`,
      {
        kind: SpanKind.CONSUMER,
        parent: propagation.extract(ROOT_CONTEXT, m.headers, natsHeadersGetter),
        attributes: {
          "messaging.system": "nats",
          "messaging.destination.name": m.subject,
          "messaging.consumer.group.name": durable,
          "messaging.message.id": eventId,
        },
        fields: { event_id: eventId, ...(requestId ? { request_id: requestId } : {}) },
      },
      () => handleOne(m, eventId),
    );
  };

  const handleOne = async (m: JsMsg, eventId: string) => {
    try {
      const event = options.decode(m.data);
      if (options.logFields !== undefined) addLogContext(options.logFields(event));
      const applied =
        options.skip?.(event) === true
          ? undefined
          : await sql.begin(async (tx) => {
              const inserted = await tx`
                insert into ${sql(schema)}.inbox (consumer, event_id) values (${durable}, ${eventId})
                on conflict do nothing returning 1`;
              if (inserted.length === 0) return false;
              await options.handle(tx, event, eventId);
              return true;
            });
      m.ack();
      const outcome = applied === undefined ? "skipped" : applied ? "applied" : "duplicate";
      eventsConsumed.inc({ consumer: durable, outcome });
      // One line per event at debug level; like every line of its handling it names the
      // trace, the event id and the request id that caused the event.
      if (logger.isLevelEnabled("debug"))
        logger.debug({ consumer: durable, subject: m.subject, outcome }, "event handled");
    } catch (err) {
      await failed(m, eventId, err);
    }
  };

  // An event that failed: redelivered later with a growing delay (the inbox makes the
  // retry safe), or, at its last attempt, recorded as a dead letter and acked so the
  // events behind it keep flowing. JetStream's delivery count is the attempt number, so
  // it survives restarts; a delivery cut short by a crash counts as an attempt too.
  const failed = async (m: JsMsg, eventId: string, err: unknown) => {
    const attempt = m.info.deliveryCount;
    const subject = m.subject.slice(prefix.length + 1);
    if (attempt < retry.maxAttempts) {
      logger.error({ err, eventId, subject: m.subject, delivery: attempt }, "event handler failed");
      m.nak(retryDelayMs(retry, attempt));
      eventsConsumed.inc({ consumer: durable, outcome: "failed" });
      return;
    }
    try {
      await recordDeadLetter(sql, schema, {
        consumer: durable,
        eventId,
        subject,
        payload: m.data,
        attempts: attempt,
        error: errorText(err),
      });
    } catch (recordErr) {
      // Not recorded (the database is down): the event must not be lost, so it is
      // redelivered and this is tried again.
      logger.error({ err: recordErr, eventId, subject: m.subject }, "dead letter not recorded; redelivering");
      m.nak(retry.maxMs);
      eventsConsumed.inc({ consumer: durable, outcome: "failed" });
      return;
    }
    m.ack();
    eventsConsumed.inc({ consumer: durable, outcome: "dead_lettered" });
    eventsDeadLettered.inc({ consumer: durable });
    logger.error(
      { err, eventId, subject: m.subject, attempts: attempt, consumer: durable },
      "event dead-lettered after its last attempt; an operator retries or discards it",
    );
  };

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeFromPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const unwatch = watchDeadLetters(sql, schema, durable);
  const loop = (async () => {
    while (!stopped) {
      try {
        messages = await consumer.consume({ max_messages: PULL_BATCH });
        // stop() may have run while consume() was opening: close what it just opened.
        if (stopped) {
          void messages.close();
          break;
        }
        for await (const m of messages) {
          await processOne(m);
          // Messages pulled but not handled are simply not acked; JetStream redelivers
          // them after the ack wait, here or to another replica.
          if (stopped) break;
        }
        // The iterator ended without stop() (the consumer was deleted, or the
        // connection closed): subscribe again, without spinning.
        if (!stopped) await pause(500);
      } catch (err) {
        if (!stopped) logger.warn({ err, durable }, "consumer interrupted; resubscribing");
        await pause(500);
      }
    }
  })();

  return {
    async stop() {
      stopped = true;
      wakeFromPause?.();
      // Not awaited: close() settles only once the iterator reaches its own stop marker,
      // which never happens when the loop breaks out first.
      void messages?.close();
      await loop;
      unwatch();
    },
  };
}
