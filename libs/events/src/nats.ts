import {
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { connect, type NatsConnection, nanos } from "@nats-io/transport-node";

export interface Nats {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/**
 * Connects to NATS and JetStream. Reconnects forever: a NATS restart pauses publishing
 * and consuming (the outbox keeps the events meanwhile) instead of killing the process.
 * The first connection waits the same way (`waitOnFirstConnect`): a process started
 * while NATS is down or restarting waits for it instead of exiting (Kubernetes' startup
 * probe bounds the wait; the process is not ready meanwhile).
 */
export async function connectNats(servers: string, name: string): Promise<Nats> {
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
  });
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc) };
}

/** The one events stream of a stack: every domain event lives under `<prefix>.`. */
export const streamName = (prefix: string) => `${prefix.toUpperCase()}_EVENTS`;

/** JetStream's error code for "stream name already in use with a different configuration". */
const STREAM_NAME_IN_USE = 10058;

/**
 * Creates the events stream, or updates it to this configuration, so every service can
 * call it at start in any order. The duplicate window is where Nats-Msg-Id deduplicates
 * a relay's republish after a crash; consumers are idempotent beyond it. Events are kept
 * on file, in `replicas` copies (`EVENTS_REPLICAS`: 3 on a three-node cluster).
 *
 * Creating a stream that exists with the same configuration succeeds, so concurrent
 * starts need no coordination; only a stream left by an older configuration is updated.
 * Any other failure (NATS unreachable, JetStream off, overlapping subjects) is thrown as
 * it is, rather than hidden behind a confusing failure of the update.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  prefix: string,
  options: { replicas?: number } = {},
): Promise<void> {
  const config = {
    name: streamName(prefix),
    subjects: [`${prefix}.>`],
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    duplicate_window: nanos(10 * 60 * 1000),
    max_age: nanos(7 * 24 * 3600 * 1000),
  };
  try {
    await jsm.streams.add(config);
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
    await jsm.streams.update(config.name, config);
  }
}
