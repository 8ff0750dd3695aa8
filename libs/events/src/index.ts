export { type ConsumerOptions, type RunningConsumer, runConsumer } from "./consumer.ts";
export { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
export { enqueueEvent, eventHeaders, type OutboxRow, REQUEST_ID_EVENT_HEADER } from "./outbox.ts";
export { OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
