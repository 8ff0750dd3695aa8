import { type ChildProcess, spawn } from "node:child_process";
import { randomInt, randomUUID } from "node:crypto";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, type Database, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPrefix, readStream, until } from "../test-fixtures/helpers.ts";
import { createEventSchema } from "../test-fixtures/schema.ts";
import { connectNats, ensureStream, type Nats, streamName } from "./nats.ts";
import { enqueueEvent, type OutboxRow } from "./outbox.ts";

// "Killing the relay or a consumer mid-way loses no event and applies none twice":
// the relay and the consumer run in child processes that are killed with SIGKILL at
// random points and restarted, and the stream and the database must end up exact.

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const EVENTS = 2_000;
const KILLS = 3;
/** Events of the batch kill test: a few full batches of 64 per consumer process. */
const BATCHED_EVENTS = 600;
/**
 * A kill lands between JetStream storing a batch and the relay marking it only by chance
 * (the relay marks within milliseconds on a quiet machine): the relay test kills again,
 * at later points, until that has happened at least once, at most this many times.
 */
const MAX_RELAY_KILLS = 12;
const fixture = (name: string) => fileURLToPath(new URL(`../test-fixtures/${name}`, import.meta.url));

let testDb: TestDatabase;
let sql: Sql;
let db: Database;
let nats: Nats;
const prefixes: string[] = [];
const children = new Set<ChildProcess>();
/** What each child printed so far. */
const outputs = new Map<ChildProcess, { text: string }>();

/** Starts a fixture in its own node process and waits until it reports ready. */
async function startChild(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fixture(script)], {
    env: { ...process.env, DATABASE_URL: testDb.url, NATS_URL, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const stdout = { text: "" };
  outputs.set(child, stdout);
  child.once("exit", () => outputs.delete(child));
  child.stdout?.on("data", (d) => {
    stdout.text += d;
  });
  await until(
    () => stdout.text.includes("ready") || child.exitCode !== null,
    (done) => done,
    { timeoutMs: 20_000, what: `${script} to start` },
  );
  if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${stderr}`);
  return child;
}

/** SIGKILL: no handler runs, no transaction commits, no ack goes out. */
async function killHard(child: ChildProcess) {
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

/** Ascending random points strictly inside the run, one per kill. */
const killPoints = (kills = KILLS) =>
  Array.from({ length: kills }, (_, i) =>
    randomInt(Math.ceil(((i + 0.2) * EVENTS) / (kills + 1)), Math.floor(((i + 1) * EVENTS) / (kills + 1))),
  );

/**
 * The events the consumer child reported under its latest transaction ("handled <txid>
 * <event id>" lines), in the order it applied them.
 */
function latestTransaction(child: ChildProcess): string[] {
  const lines = (outputs.get(child)?.text ?? "").split("\n").filter((l) => l.startsWith("handled "));
  const txid = lines.at(-1)?.split(" ")[1];
  return lines.filter((l) => l.split(" ")[1] === txid).map((l) => l.split(" ")[2] as string);
}

const count = async (query: Promise<{ n: number }[]>) => (await query)[0]?.n ?? 0;

beforeAll(async () => {
  testDb = await createTestDatabase();
  ({ sql, db } = connect(testDb.url, { max: 4 }));
  nats = await connectNats(NATS_URL, "events-kill-test");
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const prefix of prefixes) await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.drain();
  await sql?.end({ timeout: 5 });
  await testDb?.drop();
});

describe("killing processes mid-way", () => {
  it("loses no event and stores none twice when the relay is killed and restarted", {
    timeout: 60_000,
  }, async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await ensureStream(nats.jsm, prefix);
    const schema = `relay_${randomUUID().slice(0, 8)}`;
    const { outbox } = await createEventSchema(sql, schema);
    const events: OutboxRow[] = Array.from({ length: EVENTS }, (_, i) => ({
      id: randomUUID(),
      subject: `${prefix}.operations.payment.pending`,
      payload: new TextEncoder().encode(String(i)),
    }));
    for (let i = 0; i < EVENTS; i += 100) {
      await db.transaction((tx) => enqueueEvent(tx, outbox, schema, events.slice(i, i + 100)));
    }
    const unpublished = () =>
      count(sql`select count(*)::int as n from ${sql(schema)}.outbox where published_at is null`);
    const stored = async () => (await nats.jsm.streams.info(streamName(prefix))).state.messages;

    let killedMidway = 0;
    // Kills that landed after JetStream stored a batch but before the relay marked it:
    // the restarted relay must republish that batch, and the duplicate window absorb it.
    let killedBeforeMarking = 0;
    let kills = 0;
    for (const point of killPoints(MAX_RELAY_KILLS)) {
      if (kills >= KILLS && killedBeforeMarking > 0) break;
      kills++;
      const relay = await startChild("relay-child.ts", { SCHEMA: schema });
      await until(stored, (n) => n >= point, { everyMs: 5, what: `the stream to reach ${point}` });
      await killHard(relay);
      const left = await unpublished();
      if (left > 0) killedMidway++;
      if ((await stored()) > EVENTS - left) killedBeforeMarking++;
    }
    const relay = await startChild("relay-child.ts", { SCHEMA: schema });
    await until(unpublished, (n) => n === 0, { timeoutMs: 30_000, what: "the outbox to empty" });
    await killHard(relay);

    expect(killedMidway).toBeGreaterThan(0);
    expect(killedBeforeMarking).toBeGreaterThan(0);
    const messages = await readStream(nats, streamName(prefix));
    // Every event exactly once, and in the order they were committed.
    expect(messages.map((m) => m.msgId)).toEqual(events.map((e) => e.id));
  });

  it("applies every event exactly once when the consumer is killed and restarted", {
    timeout: 60_000,
  }, async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await ensureStream(nats.jsm, prefix);
    const schema = `cons_${randomUUID().slice(0, 8)}`;
    await createEventSchema(sql, schema);
    const ids = Array.from({ length: EVENTS }, () => randomUUID());
    for (let i = 0; i < EVENTS; i += 200) {
      await Promise.all(
        ids
          .slice(i, i + 200)
          .map((id) =>
            nats.js.publish(`${prefix}.operations.payment.completed`, new Uint8Array(), { msgID: id }),
          ),
      );
    }
    const applied = () => count(sql`select count(*)::int as n from ${sql(schema)}.applied`);
    // A short ack wait brings back the messages a killed consumer held, within the test.
    const env = { SCHEMA: schema, PREFIX: prefix, ACK_WAIT_MS: "2000" };

    let killedMidway = 0;
    for (const point of killPoints()) {
      const consumer = await startChild("consumer-child.ts", env);
      await until(applied, (n) => n >= point, {
        timeoutMs: 20_000,
        everyMs: 5,
        what: `${point} events applied`,
      });
      await killHard(consumer);
      if ((await applied()) < EVENTS) killedMidway++;
    }
    const consumer = await startChild("consumer-child.ts", env);
    const info = await until(
      () => nats.jsm.consumers.info(streamName(prefix), "counter"),
      (i) => i.num_pending + i.num_ack_pending === 0,
      { timeoutMs: 30_000, what: "every message acked" },
    );
    await killHard(consumer);

    expect(killedMidway).toBeGreaterThan(0);
    // Messages the killed processes held were delivered again to the next one.
    expect(info.delivered.consumer_seq).toBeGreaterThan(EVENTS);
    const rows = await sql<
      { event_id: string; times: number }[]
    >`select event_id, times from ${sql(schema)}.applied`;
    expect(rows.filter((r) => r.times !== 1)).toEqual([]);
    expect(rows.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    const inbox = await sql<{ event_id: string }[]>`
      select event_id from ${sql(schema)}.inbox where consumer = 'counter' order by event_id`;
    expect(inbox.map((r) => r.event_id)).toEqual([...ids].sort());
  });

  it("applies every event exactly once when the consumer is killed with a batch's transaction open", {
    timeout: 60_000,
  }, async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    await ensureStream(nats.jsm, prefix);
    const schema = `batch_${randomUUID().slice(0, 8)}`;
    await createEventSchema(sql, schema);
    // All published before any consumer runs, so every pull hands out a full batch.
    const ids = Array.from({ length: BATCHED_EVENTS }, () => randomUUID());
    await Promise.all(
      ids.map((id) =>
        nats.js.publish(`${prefix}.operations.payment.completed`, new Uint8Array(), { msgID: id }),
      ),
    );
    // Each event takes a few milliseconds, so a batch's transaction stays open for
    // about a fifth of a second: the kill lands inside it, with most of it still ahead.
    const env = {
      SCHEMA: schema,
      PREFIX: prefix,
      ACK_WAIT_MS: "2000",
      HANDLE_DELAY_MS: "3",
      REPORT_HANDLED: "1",
    };
    let killedMidBatch = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      const consumer = await startChild("consumer-child.ts", env);
      const inFlight = await until(
        () => latestTransaction(consumer),
        (events) => events.length >= 2,
        { timeoutMs: 20_000, everyMs: 2, what: "a transaction that applied two events of its batch" },
      );
      await killHard(consumer);
      // Killed before its commit: nothing the transaction applied is there.
      const committed = await sql`
        select 1 from ${sql(schema)}.applied where event_id in ${sql(inFlight)}`;
      if (committed.length === 0) killedMidBatch++;
    }
    const consumer = await startChild("consumer-child.ts", { ...env, HANDLE_DELAY_MS: "0" });
    const info = await until(
      () => nats.jsm.consumers.info(streamName(prefix), "counter"),
      (i) => i.num_pending + i.num_ack_pending === 0,
      { timeoutMs: 30_000, what: "every message acked" },
    );
    await killHard(consumer);

    expect(killedMidBatch).toBeGreaterThan(0);
    expect(info.delivered.consumer_seq).toBeGreaterThan(BATCHED_EVENTS);
    const rows = await sql<
      { event_id: string; times: number }[]
    >`select event_id, times from ${sql(schema)}.applied`;
    expect(rows.filter((r) => r.times !== 1)).toEqual([]);
    expect(rows.map((r) => r.event_id).sort()).toEqual([...ids].sort());
    const inbox = await sql<{ event_id: string }[]>`
      select event_id from ${sql(schema)}.inbox where consumer = 'counter' order by event_id`;
    expect(inbox.map((r) => r.event_id)).toEqual([...ids].sort());
  });
});
