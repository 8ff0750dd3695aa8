export { type ConsumerOptions, type RunningConsumer, runConsumer } from "./consumer.ts";
export { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
export { enqueueEvent, type OutboxRow } from "./outbox.ts";
export { OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
