import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  type ConsumerUpdateConfig,
  DeliverPolicy,
  JetStreamApiError,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { type EventHandling, MessageApplier } from "./consumer-apply.ts";
import { watchDeadLetters } from "./dead-letters.ts";
import { DeliveredBatches } from "./delivered-batches.ts";
import { type Nats, streamName } from "./nats.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry-policy.ts";
import { subjectMatches } from "./subscriptions.ts";

export { DEFAULT_RETRY, type RetryPolicy, retryDelayMs } from "./retry-policy.ts";

/** A durable consumer: where it reads, what it does with its events (`EventHandling`), and its bounds. */
export interface ConsumerOptions<T> extends EventHandling<T> {
  nats: Nats;
  prefix: string;
  /** Durable consumer name; also the key of this consumer's rows in the inbox. */
  durable: string;
  /** Subjects without the prefix, for example ["operations.>"]. */
  subjects: string[];
  sql: Sql;
  /** The consuming service's schema, holding its `inbox` table. */
  schema: string;
  logger: Logger;
  /**
   * How long JetStream waits for an ack before it redelivers a message, in milliseconds
   * (default 30 s). A consumer killed mid-batch gets its messages back after this long.
   */
  ackWaitMs?: number;
  /**
   * Messages handed out and not yet acked, across every replica of the consumer. 1 makes
   * the consumer apply events strictly in stream order even with several replicas, at
   * the price of one event per transaction (a batch never holds more than this).
   */
  maxAckPending?: number;
  /**
   * Events applied in one transaction at most (default and most: 64, the pull's bound).
   * 1 gives every event a transaction of its own, for handlers that must not hold the
   * locks of the events before them while they run (they call other services, or open
   * transactions of their own on rows those events may have locked).
   */
  maxBatch?: number;
  /** When an event goes to the dead letters: how often it is tried, and the backoff between tries. */
  retry?: RetryPolicy;
}

export interface RunningConsumer {
  /** Stops pulling, finishes the batch in hand, and returns. */
  stop(): Promise<void>;
}

/**
 * Messages pulled ahead of the ones being handled, and the most one batch takes. Bounded
 * so a slow handler never holds many past their ack wait, and a batch's transaction
 * stays short.
 */
const PULL_BATCH = 64;

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

/**
 * Runs a durable JetStream pull consumer whose effects are exactly-once: the event id
 * goes into the service's inbox in the same Postgres transaction as the effect, and the
 * message is acked only after that transaction commits. The messages a pull has already
 * delivered are applied together, up to `maxBatch`, in one transaction, in stream order
 * (`MessageApplier`); a lone message is applied at once, never held for others. A crash
 * before the commit means redelivery of the batch and a clean retry; a crash after it
 * means redelivery and a no-op.
 */
export async function runConsumer<T>(options: ConsumerOptions<T>): Promise<RunningConsumer> {
  const { nats, prefix, durable, sql, schema, logger } = options;
  const retry = options.retry ?? DEFAULT_RETRY;
  if (!(retry.maxAttempts >= 1) || !(retry.baseMs >= 0) || !(retry.maxMs >= retry.baseMs)) {
    throw new Error(`consumer ${durable}: invalid retry policy ${JSON.stringify(retry)}`);
  }
  const maxBatch = options.maxBatch ?? PULL_BATCH;
  if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > PULL_BATCH) {
    throw new Error(
      `consumer ${durable}: maxBatch must be an integer from 1 to ${PULL_BATCH}, not ${maxBatch}`,
    );
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

  const applier = new MessageApplier<T>({ ...options, retry, outsideList });

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
        const batches = new DeliveredBatches(messages);
        while (!stopped) {
          const batch = await batches.take(maxBatch);
          if (batch === undefined) break;
          // Messages pulled but not taken are simply not acked; JetStream redelivers
          // them after the ack wait, here or to another replica.
          await applier.handleBatch(batch);
        }
        // The iterator ended without stop() (the consumer was deleted, or the
        // connection closed): subscribe again, without spinning.
        if (!stopped) await pause(500);
      } catch (err) {
        if (!stopped) logger.warn({ err, durable }, "consumer interrupted; resubscribing");
        // Closed before the next subscription opens, so two never pull at once.
        void messages?.close();
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
