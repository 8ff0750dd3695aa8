/**
 * A relay process for the kill tests: relays the outbox of SCHEMA until it is killed.
 * Prints "ready" once it is listening. Run with `node relay-child.ts`.
 */
import { connect } from "@gw/db";
import { createLogger } from "@gw/log";
import { connectNats } from "../src/nats.ts";
import { OutboxRelay } from "../src/relay.ts";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const { sql } = connect(env("DATABASE_URL"), { max: 2, application: "relay-child" });
const nats = await connectNats(env("NATS_URL"), "relay-child");
// Small batches so a kill lands between a batch's publishes and its commit more often.
const relay = new OutboxRelay({
  sql,
  schema: env("SCHEMA"),
  js: nats.js,
  logger: createLogger("relay-child", "warn"),
  batchSize: 25,
  pollMs: 50,
});
await relay.start();
process.stdout.write("ready\n");
