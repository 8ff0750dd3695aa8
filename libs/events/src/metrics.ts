import { metricsRegistry } from "@gw/rpc";
import { Counter, Gauge, Histogram } from "prom-client";

/** Outbox rows committed but not yet acknowledged by JetStream, per schema, as last sampled by a relay. */
export const outboxUnpublished = new Gauge({
  name: "outbox_unpublished",
  help: "Outbox rows waiting to be published, per schema, sampled by the relay.",
  labelNames: ["schema"],
  registers: [metricsRegistry],
});

/** Outbox rows a relay published and marked, per schema. */
export const eventsPublished = new Counter({
  name: "events_published_total",
  help: "Events published from the outbox to JetStream and marked published, per schema.",
  labelNames: ["schema"],
  registers: [metricsRegistry],
});

/**
 * Messages a consumer finished, by outcome: `applied` (the handler ran and committed),
 * `duplicate` (the inbox already held the id, so it was only acked), `skipped` (the
 * consumer's `skip` said the handler would do nothing with it: acked without a
 * transaction), `not_subscribed` (outside its subjects, on a server that cannot filter
 * them), `failed` (the handler or the decoder threw, so the message was nak-ed for
 * redelivery) and `dead_lettered` (it failed its last attempt, was recorded in
 * `dead_letters` and acked).
 */
export const eventsConsumed = new Counter({
  name: "events_consumed_total",
  help: "Events taken by a durable consumer, by consumer and outcome (applied, duplicate, skipped, not_subscribed, failed, dead_lettered).",
  labelNames: ["consumer", "outcome"],
  registers: [metricsRegistry],
});

/**
 * Events published, by schema and type (the subject without the prefix, for example
 * `operations.payment.completed`): the business figures that are state changes, such
 * as completions, read off the events. A relay restarted mid-batch may count a
 * republished event twice.
 */
export const domainEvents = new Counter({
  name: "domain_events_total",
  help: "Events published from the outbox, by schema and type (subject without the prefix).",
  labelNames: ["schema", "type"],
  registers: [metricsRegistry],
});

/** Events a consumer gave up on after its attempts and recorded as dead letters, per consumer. */
export const eventsDeadLettered = new Counter({
  name: "events_dead_lettered_total",
  help: "Events recorded in a dead_letters table after their last failed attempt, per consumer.",
  labelNames: ["consumer"],
  registers: [metricsRegistry],
});

/**
 * Messages a durable consumer took from its pull in one batch (what had arrived when it
 * looked, at most its bound): the events of a batch are applied in one transaction, so
 * the batch size is how many events share a commit, skipped and duplicate ones included.
 */
export const consumerBatchSize = new Histogram({
  name: "events_consumer_batch_size",
  help: "Messages a durable consumer took and handled as one batch (one transaction for the events it applies), per consumer.",
  labelNames: ["consumer"],
  buckets: [1, 2, 4, 8, 16, 32, 64],
  registers: [metricsRegistry],
});
