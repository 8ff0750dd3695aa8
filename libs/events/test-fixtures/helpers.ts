import { randomBytes } from "node:crypto";
import type { Nats } from "../src/nats.ts";

/** A fresh events prefix, so each run has its own stream and subjects. */
export const randomPrefix = () => `t_${randomBytes(5).toString("hex")}`;

/**
 * Polls `probe` until it returns a value `done` accepts, or fails after `timeoutMs`
 * with the last value seen, so a test waits for a condition instead of sleeping.
 */
export async function until<T>(
  probe: () => Promise<T> | T,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, everyMs = 25, what = "condition" } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${String(value)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface StoredEvent {
  seq: number;
  subject: string;
  msgId: string | undefined;
  data: Uint8Array;
}

/** Reads every message of a stream in stream order through an ordered consumer. */
export async function readStream(nats: Nats, stream: string): Promise<StoredEvent[]> {
  const total = (await nats.jsm.streams.info(stream)).state.messages;
  const out: StoredEvent[] = [];
  if (total === 0) return out;
  const consumer = await nats.js.consumers.get(stream);
  const messages = await consumer.consume({ max_messages: 500 });
  for await (const m of messages) {
    out.push({ seq: m.seq, subject: m.subject, msgId: m.headers?.get("Nats-Msg-Id"), data: m.data });
    if (m.info.pending === 0) break;
  }
  await consumer.delete().catch(() => {});
  return out;
}
