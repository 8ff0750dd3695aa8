import type { Sql } from "@gw/db";
import { addLogContext, type LogContext, type Logger } from "@gw/log";
import { inSpan } from "@gw/rpc";
import type { JsMsg } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import { propagation, ROOT_CONTEXT, SpanKind, type TextMapGetter } from "@opentelemetry/api";
import type postgres from "postgres";
import { validate as isUuid, v5 as uuidv5 } from "uuid";
import { errorText, recordDeadLetter } from "./dead-letters.ts";
import { consumerBatchSize, eventsConsumed, eventsDeadLettered } from "./metrics.ts";
import { REQUEST_ID_EVENT_HEADER } from "./outbox.ts";
import { type RetryPolicy, retryDelayMs } from "./retry-policy.ts";

/** What a consumer does with its events: how it reads them, applies them, and which it leaves. */
export interface EventHandling<T> {
  decode: (data: Uint8Array) => T;
  /**
   * Applies the event inside the transaction that also records it in the inbox; the
   * other events of its batch are applied in the same transaction, before or after it
   * in stream order.
   */
  handle: (tx: postgres.TransactionSql, event: T, eventId: string) => Promise<void>;
  /**
   * Whether the event is acked as it is, without a transaction or an inbox row: only for
   * events `handle` provably does nothing with, decided from the event alone, since a
   * skipped event is never applied.
   */
  skip?: (event: T) => boolean;
  /** Log fields an event names (its shop, its operation), added to every line its handling logs. */
  logFields?: (event: T) => LogContext;
}

/** What a `MessageApplier` needs besides the consumer's handling. */
export interface MessageApplierOptions<T> extends EventHandling<T> {
  durable: string;
  prefix: string;
  sql: Sql;
  /** The consuming service's schema, holding its `inbox` and `dead_letters` tables. */
  schema: string;
  logger: Logger;
  retry: RetryPolicy;
  /** Whether a subject is outside the consumer's list (a server given one wider filter). */
  outsideList: ((subject: string) => boolean) | undefined;
}

/** A message of a batch that goes to the inbox: its inbox key and its event. */
interface Item<T> {
  m: JsMsg;
  eventId: string;
  event: T;
}

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

/** Reads W3C trace headers from NATS message headers. */
const natsHeadersGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (carrier) => (carrier === undefined ? [] : carrier.keys()),
  get: (carrier, key) => (carrier?.has(key) ? carrier.get(key) : undefined),
};

/**
 * Applies the messages of a durable consumer, a batch at a time, exactly once: each
 * event id goes into the service's inbox in the same Postgres transaction as the
 * event's effect, and a message is acked only after that transaction commits. A crash
 * before the commit means redelivery of the whole batch and a clean retry; a crash
 * after it means redelivery and a no-op.
 */
export class MessageApplier<T> {
  readonly #o: MessageApplierOptions<T>;

  constructor(options: MessageApplierOptions<T>) {
    this.#o = options;
  }

  /**
   * Handles a batch in stream order: messages outside the list and skipped events are
   * acked at once; the others are applied together in one transaction, or alone when
   * only one is left.
   */
  async handleBatch(batch: readonly JsMsg[]): Promise<void> {
    consumerBatchSize.observe({ consumer: this.#o.durable }, batch.length);
    const items: Item<T>[] = [];
    for (const m of batch) {
      const item = await this.#prepare(m);
      if (item !== undefined) items.push(item);
    }
    const [only] = items;
    if (items.length === 1 && only !== undefined) await this.#applyAlone(only);
    else if (items.length > 1) await this.#applyTogether(items);
  }

  /** The message as an item to apply, or undefined when it was acked (or failed) here. */
  async #prepare(m: JsMsg): Promise<Item<T> | undefined> {
    if (this.#o.outsideList?.(m.subject)) {
      m.ack();
      eventsConsumed.inc({ consumer: this.#o.durable, outcome: "not_subscribed" });
      return undefined;
    }
    const eventId = eventIdOf(m);
    let event: T;
    try {
      event = this.#o.decode(m.data);
    } catch (err) {
      await this.#failed(m, eventId, err);
      return undefined;
    }
    if (this.#o.skip?.(event) === true) {
      m.ack();
      this.#counted({ m, eventId, event }, "skipped");
      return undefined;
    }
    return { m, eventId, event };
  }

  /**
   * The batch's events in one transaction: one inbox insert for them all, then the
   * handler of each event the inbox did not hold yet, in stream order, then one commit
   * and the acks.
   *
   * When the transaction fails, each event is applied again alone (`#applyAlone`), so
   * the good ones commit at once and only the one that fails is retried or
   * dead-lettered by its own delivery count. Savepoints would let the good ones stay in
   * the batch's transaction instead, but they cost two more round trips per event on
   * every batch (most of what the batch saves over a transaction each) and a
   * subtransaction each, while the rerun costs only when a batch fails, which is rare:
   * a handler that throws, a deadlock with another transaction, a lost connection.
   */
  async #applyTogether(items: Item<T>[]): Promise<void> {
    const { sql, schema, durable, handle } = this.#o;
    let applied: boolean[];
    try {
      applied = await sql.begin(async (tx) => {
        // A UUID goes in any case and comes back in lower case; an id twice in the batch
        // (the stream held the event twice) is applied at its first place only.
        const fresh = new Set(
          (
            await tx<{ event_id: string }[]>`
              insert into ${sql(schema)}.inbox (consumer, event_id)
              select ${durable}, id from unnest(${items.map((i) => i.eventId)}::uuid[]) as ids (id)
              on conflict do nothing returning event_id`
          ).map((r) => r.event_id),
        );
        const out: boolean[] = [];
        for (const item of items) {
          const isNew = fresh.delete(item.eventId.toLowerCase());
          if (isNew) await this.#inSpan(item, () => handle(tx, item.event, item.eventId));
          out.push(isNew);
        }
        return out;
      });
    } catch (err) {
      this.#o.logger.warn(
        { err, consumer: durable, events: items.length },
        "batch not applied; applying its events one by one",
      );
      for (const item of items) await this.#applyAlone(item);
      return;
    }
    items.forEach((item, i) => {
      item.m.ack();
      this.#counted(item, applied[i] ? "applied" : "duplicate");
    });
  }

  /** One event in a transaction of its own, acked after the commit; a failure goes to `#failed`. */
  #applyAlone(item: Item<T>): Promise<void> {
    const { sql, schema, durable, handle } = this.#o;
    return this.#inSpan(item, async () => {
      try {
        const applied = await sql.begin(async (tx) => {
          const inserted = await tx`
            insert into ${sql(schema)}.inbox (consumer, event_id) values (${durable}, ${item.eventId})
            on conflict do nothing returning 1`;
          if (inserted.length === 0) return false;
          await handle(tx, item.event, item.eventId);
          return true;
        });
        item.m.ack();
        this.#counted(item, applied ? "applied" : "duplicate");
      } catch (err) {
        await this.#failed(item.m, item.eventId, err);
      }
    });
  }

  /**
   * Runs `fn` in a CONSUMER span that continues the trace of the change that wrote the
   * event (the `traceparent` the outbox stored), with the event id, the request id and
   * the event's own log fields in the log context.
   */
  #inSpan<R>(item: Item<T>, fn: () => Promise<R>): Promise<R> {
    const { m, eventId, event } = item;
    const requestId = m.headers?.has(REQUEST_ID_EVENT_HEADER) ? m.headers.get(REQUEST_ID_EVENT_HEADER) : "";
    return inSpan(
      `${m.subject.slice(this.#o.prefix.length + 1)} process`,
      {
        kind: SpanKind.CONSUMER,
        parent: propagation.extract(ROOT_CONTEXT, m.headers, natsHeadersGetter),
        attributes: {
          "messaging.system": "nats",
          "messaging.destination.name": m.subject,
          "messaging.consumer.group.name": this.#o.durable,
          "messaging.message.id": eventId,
        },
        fields: { event_id: eventId, ...(requestId ? { request_id: requestId } : {}) },
      },
      () => {
        if (this.#o.logFields !== undefined) addLogContext(this.#o.logFields(event));
        return fn();
      },
    );
  }

  /** Counts an acked event by outcome, with one line at debug level. */
  #counted(item: Item<T>, outcome: "applied" | "duplicate" | "skipped") {
    const { durable, logger } = this.#o;
    eventsConsumed.inc({ consumer: durable, outcome });
    if (logger.isLevelEnabled("debug"))
      logger.debug(
        { consumer: durable, subject: item.m.subject, event_id: item.eventId, outcome },
        "event handled",
      );
  }

  /**
   * An event that failed: redelivered later with a growing delay (the inbox makes the
   * retry safe), or, at its last attempt, recorded as a dead letter and acked so the
   * events behind it keep flowing. JetStream's delivery count is the attempt number, so
   * it survives restarts; a delivery cut short by a crash counts as an attempt too.
   */
  async #failed(m: JsMsg, eventId: string, err: unknown): Promise<void> {
    const { durable, logger, retry, sql, schema } = this.#o;
    const attempt = m.info.deliveryCount;
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
        subject: m.subject.slice(this.#o.prefix.length + 1),
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
  }
}
