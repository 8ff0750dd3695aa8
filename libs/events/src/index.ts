export {
  type ConsumerOptions,
  coveringFilter,
  DEFAULT_RETRY,
  type RetryPolicy,
  type RunningConsumer,
  retryDelayMs,
  runConsumer,
} from "./consumer.ts";
export { DeadLetterHandlers } from "./dead-letter-service.ts";
export {
  DEAD_LETTER_STATUSES,
  DeadLetterNotFoundError,
  DeadLetterResolvedError,
  DeadLetterRetryFailedError,
  type DeadLetterRow,
  type DeadLetterStatus,
  discardDeadLetter,
  type EventApplier,
  listDeadLetters,
  retryDeadLetter,
} from "./dead-letters.ts";
export { EventHealthHandlers, type EventHealthOptions } from "./event-health.ts";
export {
  type CacheOutcome,
  InvalidatedCache,
  type InvalidatedCacheOptions,
  pricingInvalidationSubject,
  publishInvalidation,
} from "./invalidated-cache.ts";
export { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
export { startNatsProxy } from "./nats-proxy.ts";
export { enqueueEvent, eventHeaders, type OutboxRow, REQUEST_ID_EVENT_HEADER } from "./outbox.ts";
export { OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
export { CONSUMER_SUBJECTS, poolPayinsSkip, subjectMatches, subjectsRegex } from "./subscriptions.ts";
