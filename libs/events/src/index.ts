export { connectNats, ensureStream, streamName, type Nats } from "./nats.ts";
export { enqueueEvent, type OutboxRow } from "./outbox.ts";
export { OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
export { runConsumer, type ConsumerOptions, type RunningConsumer } from "./consumer.ts";
