/**
 * A consumer process for the kill tests: applies every event of PREFIX by counting it in
 * SCHEMA.applied until it is killed. Prints "ready" once it consumes. Run with `node`.
 * With HANDLE_DELAY_MS each event's handler takes that long, so a batch's transaction
 * stays open long enough to be killed in; with REPORT_HANDLED it prints
 * "handled <transaction id> <event id>" for each event it applied, before the commit.
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
const delayMs = Number(process.env.HANDLE_DELAY_MS ?? 0);
const report = process.env.REPORT_HANDLED === "1";
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
  async handle(tx, _event, eventId) {
    await countApplication(tx, schema, eventId);
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (report) {
      const [row] = await tx<{ txid: string }[]>`select txid_current()::text as txid`;
      process.stdout.write(`handled ${row?.txid} ${eventId}\n`);
    }
  },
});
process.stdout.write("ready\n");
