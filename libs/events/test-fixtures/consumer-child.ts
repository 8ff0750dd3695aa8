/**
 * A consumer process for the kill tests: applies every event of PREFIX by counting it in
 * SCHEMA.applied until it is killed. Prints "ready" once it consumes. Run with `node`.
 */
import { connect } from "@gw/db";
import { createLogger } from "@gw/log";
import { runConsumer } from "../src/consumer.ts";
import { connectNats } from "../src/nats.ts";
import { countApplication } from "./schema.ts";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const schema = env("SCHEMA");
const { sql } = connect(env("DATABASE_URL"), { max: 2, application: "consumer-child" });
const nats = await connectNats(env("NATS_URL"), "consumer-child");
await runConsumer({
  nats,
  prefix: env("PREFIX"),
  durable: "counter",
  subjects: ["operations.>"],
  sql,
  schema,
  logger: createLogger("consumer-child", "warn"),
  ackWaitMs: Number(env("ACK_WAIT_MS")),
  decode: (data) => data,
  handle: (tx, _event, eventId) => countApplication(tx, schema, eventId),
});
process.stdout.write("ready\n");
