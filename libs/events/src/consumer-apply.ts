import type { Sql } from "@gw/db";
import type { LogContext, Logger } from "@gw/log";
import type { JsMsg } from "@nats-io/jetstream";
import type postgres from "postgres";
import { validate as isUuid, v5 as uuidv5 } from "uuid";
import { errorText, recordDeadLetter } from "./dead-letters.ts";
import { closeEventTrace, type EventTrace, openEventTrace, withinEvent } from "./event-trace.ts";
import { consumerBatchSize, eventsConsumed, eventsDeadLettered } from "./metrics.ts";
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

/** A message being handled: its inbox key and its span, open until it is acked or failed. */
interface Delivery {
  m: JsMsg;
  eventId: string;
  trace: EventTrace;
}

/** A message of a batch that goes to the inbox, with its event. */
interface Item<T> extends Delivery {
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

  /**
   * The message as an item to apply, or undefined when it was acked (outside the list,
   * or skipped) or failed here (it could not be decoded).
   */
  async #prepare(m: JsMsg): Promise<Item<T> | undefined> {
    const { durable, prefix, decode, skip, logFields } = this.#o;
    if (this.#o.outsideList?.(m.subject)) {
      m.ack();
      eventsConsumed.inc({ consumer: durable, outcome: "not_subscribed" });
      return undefined;
    }
    const eventId = eventIdOf(m);
    const delivery = { m, eventId, trace: openEventTrace(m, eventId, durable, prefix) };
    let event: T;
    try {
      event = withinEvent(delivery.trace, () => decode(m.data));
      // Every later line of the event's handling carries the fields it names.
      if (logFields !== undefined) Object.assign(delivery.trace.fields, logFields(event));
    } catch (err) {
      await this.#failed(delivery, err);
      return undefined;
    }
    const item = { ...delivery, event };
    if (skip?.(event) === true) {
      m.ack();
      this.#done(item, "skipped");
      return undefined;
    }
    return item;
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
          if (isNew) await withinEvent(item.trace, () => handle(tx, item.event, item.eventId));
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
      this.#done(item, applied[i] ? "applied" : "duplicate");
    });
  }

  /** One event in a transaction of its own, acked after the commit; a failure goes to `#failed`. */
  async #applyAlone(item: Item<T>): Promise<void> {
    const { sql, schema, durable, handle } = this.#o;
    let applied: boolean;
    try {
      applied = await withinEvent(item.trace, () =>
        sql.begin(async (tx) => {
          const inserted = await tx`
            insert into ${sql(schema)}.inbox (consumer, event_id) values (${durable}, ${item.eventId})
            on conflict do nothing returning 1`;
          if (inserted.length === 0) return false;
          await handle(tx, item.event, item.eventId);
          return true;
        }),
      );
    } catch (err) {
      await this.#failed(item, err);
      return;
    }
    // Acked outside the try: an ack that fails after the commit (the connection closed)
    // means a redelivery the inbox answers, never a failure of an applied event.
    item.m.ack();
    this.#done(item, applied ? "applied" : "duplicate");
  }

  /** Counts an acked event by outcome, logs one line at debug level in its context, and ends its span. */
  #done(item: Item<T>, outcome: "applied" | "duplicate" | "skipped") {
    const { durable, logger } = this.#o;
    eventsConsumed.inc({ consumer: durable, outcome });
    if (logger.isLevelEnabled("debug"))
      withinEvent(item.trace, () =>
        logger.debug({ consumer: durable, subject: item.m.subject, outcome }, "event handled"),
      );
    closeEventTrace(item.trace);
  }

  /**
   * An event that failed: redelivered later with a growing delay (the inbox makes the
   * retry safe), or, at its last attempt, recorded as a dead letter and acked so the
   * events behind it keep flowing. JetStream's delivery count is the attempt number, so
   * it survives restarts; a delivery cut short by a crash counts as an attempt too.
   */
  async #failed(delivery: Delivery, err: unknown): Promise<void> {
    await withinEvent(delivery.trace, () => this.#retryOrDeadLetter(delivery, err));
    closeEventTrace(delivery.trace, err);
  }

  async #retryOrDeadLetter({ m, eventId }: Delivery, err: unknown): Promise<void> {
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
