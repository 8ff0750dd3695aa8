import { jetstream, type JetStreamClient, type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection, nanos } from "@nats-io/transport-node";

export interface Nats {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/**
 * Connects to NATS and JetStream. Reconnects forever: a NATS restart pauses publishing
 * and consuming (the outbox keeps the events meanwhile) instead of killing the process.
 */
export async function connectNats(servers: string, name: string): Promise<Nats> {
  const nc = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc) };
}

/** The one events stream of a stack: every domain event lives under `<prefix>.`. */
export const streamName = (prefix: string) => `${prefix.toUpperCase()}_EVENTS`;

/**
 * Creates the events stream, or updates it to this configuration, so every service can
 * call it at start in any order. The duplicate window is where Nats-Msg-Id deduplicates
 * a relay's republish after a crash; consumers are idempotent beyond it.
 */
export async function ensureStream(jsm: JetStreamManager, prefix: string): Promise<void> {
  const config = {
    name: streamName(prefix),
    subjects: [`${prefix}.>`],
    duplicate_window: nanos(10 * 60 * 1000),
    max_age: nanos(7 * 24 * 3600 * 1000),
  };
  try {
    await jsm.streams.add(config);
  } catch {
    // Another process created it first, or it exists with an older configuration.
    await jsm.streams.update(config.name, config);
  }
}
