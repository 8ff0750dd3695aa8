/**
 * The create path under load: `POST /v1/payment` through the whole stack (edge →
 * operations → ledger quote → sandbox provider → one statement recording the outcome and
 * its event), at rising concurrency, next to pgbench running the same SQL that the
 * gateway's own services run for one create, against the same database. Then a replay
 * of one key (same key, same body), `POST /v1/get_operation_state` and `GET /v1/balances`
 * at the best create concurrency. Prints throughput, p50/p99, the ratio, and the CPU
 * every process of the stack spent per call in each window (`process-cpu.ts`), the figure
 * that holds up on a busy machine. Not a test: nothing here asserts a time.
 *
 *   pnpm --filter @gw/tests bench [--duration=5000] [--levels=1,16,64] [--warmup=5000]
 *   (PROF_DIR=<dir> for a V8 CPU profile of every service)
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { type Measurement, measure, measureOpenLoop } from "@gw/bench";
import postgres from "postgres";
import { Agent, request } from "undici";
import { startTestStack } from "../src/stack.ts";
import { type CpuSnapshot, cpuBetween, cpuPerCall, formatCpuTable, snapshotCpu } from "./process-cpu.ts";
import {
  type BatchSnapshot,
  formatBatches,
  sandboxCreates,
  snapshotBatches,
  startLoopWindow,
} from "./stack-metrics.ts";

const run = promisify(execFile);
const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const durationMs = Number(arg("duration", "5000"));
const levels = arg("levels", "1,16,64").split(",").map(Number);
const warmupMs = Number(arg("warmup", "5000"));

/**
 * The statements one create runs in operations and ledger (read the key, read the route
 * with its providers, read the pricing tier, claim the key, record the outcome with its
 * outbox row), plus the edge's key lookup. Each is its own autocommit statement, as in
 * the services. The sandbox provider's own writes are left out: it stands for a provider
 * outside the gateway. The outbox row is written already published, so that the stack's
 * relay, running beside pgbench, does not try to publish a subject no stream takes (and
 * stall on it for the rest of the run); the relay's own marking is left out with it.
 */
function createPathScript(shopId: string, keyHash: string): string {
  return `
\\set r random(1, 2000000000)
select k.id, s.id, s.merchant_id from edge.api_keys k join edge.shops s on s.id = k.shop_id where k.key_hash = '${keyHash}' and k.revoked_at is null;
select * from operations.operations where shop_id = '${shopId}' and merchant_operation_id = 'pgb-' || :r || '-' || :client_id;
select r.payin, r.payout, r.settlement_currency, (select json_agg(p.name) from operations.providers p where p.name = any(r.payin)) from operations.routes r where r.shop_id = '${shopId}' and r.method = 'WT_RUB_C2C';
select * from ledger.pricing_tiers where shop_id = '${shopId}' and method = 'WT_RUB_C2C' and direction = 'payin' and min_amount <= 1000.00 and max_amount >= 1000.00;
insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash, type, status, method, currency, expected_amount, client_id, settlement_currency, commission_percent, commission_fixed, routing_deadline) values (gen_random_uuid(), '${shopId}', '${shopId}', 'pgb-' || :r || '-' || :client_id, 'h', 'payment', 'routing', 'WT_RUB_C2C', 'RUB', 1000.00, 'c', 'RUB', 2.5, 0, now()) on conflict do nothing;
with upd as (update operations.operations set status = 'pending', number = '2200000000000000', version = version + 1, updated_at = now() where shop_id = '${shopId}' and merchant_operation_id = 'pgb-' || :r || '-' || :client_id and version = 0 returning id), ev as (insert into operations.outbox (id, subject, payload, published_at) select gen_random_uuid(), 'pgb.operations.payment.pending', '\\x00'::bytea, now() from upd) select count(*) from upd;
`;
}

async function pgbenchCreatePath(databaseUrl: string, shopId: string, keyHash: string, clients: number) {
  const url = new URL(databaseUrl);
  const dir = await mkdtemp(path.join(os.tmpdir(), "gw-pgbench-"));
  const file = path.join(dir, "create-path.sql");
  await writeFile(file, createPathScript(shopId, keyHash));
  try {
    const seconds = Math.max(1, Math.round(durationMs / 1000));
    const { stdout } = await run("pgbench", [
      "-h",
      url.hostname,
      "-p",
      url.port || "5432",
      "-U",
      decodeURIComponent(url.username || "postgres"),
      "-n",
      "-f",
      file,
      "-c",
      String(clients),
      "-j",
      "2",
      "-T",
      String(seconds),
      "-M",
      "prepared",
      url.pathname.slice(1),
    ]);
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    const latency = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]);
    return { tps, latency };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// PROF_DIR=<dir>: every service writes a V8 CPU profile there when the stack stops.
const profDir = process.env.PROF_DIR;
const stack = await startTestStack({
  extraEnv: {
    LOG_LEVEL: "warn",
    // One key drives every level: its in-flight limit (16 by default) must not be what is measured.
    MAX_IN_FLIGHT_PER_KEY: String(Math.max(...levels)),
    ...(profDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profDir}` } : {}),
  },
});
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
try {
  const shop = await stack.provisionShop({ name: "bench" });
  const agent = new Agent({ connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { "x-api-key": shop.apiKey, "content-type": "application/json" };
  const body = (mop: string) =>
    JSON.stringify({
      merchant_operation_id: mop,
      client_id: "bench",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
  const call = async (method: "GET" | "POST", route: string, payload?: string) => {
    const res = await request(`${stack.urls.edge}${route}`, {
      method,
      dispatcher: agent,
      headers,
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${text.slice(0, 200)}`);
    return text;
  };
  const create = () => call("POST", "/v1/payment", body(randomUUID()));

  // A running gateway is warm: every process's JIT has compiled the create path before
  // the first level is measured, or the level at 1 in flight measures compilation.
  await measure(create, { concurrency: 16, durationMs: warmupMs });
  // What every process spends with nothing to do (pollers, timers, heartbeats), per
  // second, once the warm-up's events have been handled; it is taken off each window.
  await new Promise((r) => setTimeout(r, 2000));
  const idleMs = 3000;
  const idleStart = await snapshotCpu(stack, sql);
  await new Promise((r) => setTimeout(r, idleMs));
  const idlePerSecond = new Map(
    [...cpuBetween(idleStart, await snapshotCpu(stack, sql))].map(([l, s]) => [l, s / (idleMs / 1000)]),
  );

  /** Waits (30 s at most) until no process of the stack is busier than twice its idle rate, plus 20 ms/s. */
  const untilIdle = async () => {
    for (let waited = 0; waited < 30_000; waited += 500) {
      const start = await snapshotCpu(stack, sql);
      await new Promise((r) => setTimeout(r, 500));
      const busy = [...cpuBetween(start, await snapshotCpu(stack, sql))].filter(
        ([label, s]) => label !== "bench client" && s * 2 > 2 * (idlePerSecond.get(label) ?? 0) + 0.02,
      );
      if (busy.length === 0) return;
    }
  };

  // CPU of every process over each measured window, per call of that window.
  const cpuColumns: { name: string; perCall: Map<string, number> }[] = [];
  // Postgres commits over each window, per call: every transaction the database ran
  // (pg_stat_database.xact_commit; the server flushes a backend's counts at least once a
  // second, a small share of a window of several seconds).
  const commitColumns: { name: string; perCall: number; sandbox: number }[] = [];
  // Writes per batched statement over each window (operations' claims and row writes, the
  // consumers' transactions), mean and number of statements.
  const batchLines: string[] = [];
  const commits = async () =>
    Number(
      (
        await sql<
          { n: string }[]
        >`select xact_commit::text as n from pg_stat_database where datname = current_database()`
      )[0]?.n ?? Number.NaN,
    );
  const step = async (name: string, loop: () => Promise<unknown>, concurrency: number) => {
    let before: CpuSnapshot | undefined;
    let after: CpuSnapshot | undefined;
    let commitsBefore = 0;
    let commitsAfter = 0;
    let sandboxBefore = 0;
    let sandboxAfter = 0;
    let batchesBefore: BatchSnapshot = new Map();
    let batchesAfter: BatchSnapshot = new Map();
    const m = await measure(loop, {
      concurrency,
      durationMs,
      warmupMs: 1000,
      onWindowStart: async () => {
        batchesBefore = await snapshotBatches(stack);
        sandboxBefore = await sandboxCreates(stack);
        before = await snapshotCpu(stack, sql);
        commitsBefore = await commits();
      },
      onWindowEnd: async () => {
        commitsAfter = await commits();
        after = await snapshotCpu(stack, sql);
        sandboxAfter = await sandboxCreates(stack);
        batchesAfter = await snapshotBatches(stack);
      },
    });
    cpuColumns.push({ name, perCall: cpuPerCall(before!, after!, m.calls, m.durationMs, idlePerSecond) });
    commitColumns.push({
      name,
      perCall: (commitsAfter - commitsBefore) / m.calls,
      sandbox: (sandboxAfter - sandboxBefore) / m.calls,
    });
    batchLines.push(`${name.padStart(10)}: ${formatBatches(batchesBefore, batchesAfter)}`);
    return m;
  };
  const row = (label: string, m: Measurement) =>
    `${label.padStart(24)} | ${String(m.concurrency).padStart(9)} | ${m.callsPerSec.toFixed(0).padStart(7)} | ${m.p50Ms.toFixed(1).padStart(7)} | ${m.p99Ms.toFixed(1).padStart(7)} | ${m.errors}${m.firstError ? ` (${m.firstError})` : ""}`;

  console.log(`load average at start: ${(await readFile("/proc/loadavg", "utf8")).trim()}`);
  console.log(`POST /v1/payment through the whole stack (${durationMs} ms per level)`);
  console.log(`${"step".padStart(24)} | in flight |  call/s |  p50 ms |  p99 ms | errors`);
  const results = [];
  for (const concurrency of levels) {
    const m = await step(`create@${concurrency}`, create, concurrency);
    results.push(m);
    console.log(row("create", m));
  }
  const best = results.reduce((a, b) => (b.callsPerSec > a.callsPerSec ? b : a));

  // Creates at half the best rate, started on a schedule as independent merchants would,
  // with latency from each one's scheduled start; once the consumers have worked off the
  // last level's events, whose backlog would otherwise land on this window's first second.
  await untilIdle();
  let openBefore: CpuSnapshot | undefined;
  let openAfter: CpuSnapshot | undefined;
  let openBatches: BatchSnapshot = new Map();
  let endLoops: (() => Promise<string>) | undefined;
  let loops = "";
  const open = await measureOpenLoop(create, {
    ratePerSec: Math.max(1, Math.round(best.callsPerSec / 2)),
    durationMs,
    warmupMs: 1000,
    onWindowStart: async () => {
      openBatches = await snapshotBatches(stack);
      endLoops = await startLoopWindow(stack);
      openBefore = await snapshotCpu(stack, sql);
    },
    onWindowEnd: async () => {
      openAfter = await snapshotCpu(stack, sql);
      loops = (await endLoops?.()) ?? "";
      batchLines.push(
        `${"open@half".padStart(10)}: ${formatBatches(openBatches, await snapshotBatches(stack))}`,
      );
    },
  });
  cpuColumns.push({
    name: "open@half",
    perCall: cpuPerCall(openBefore!, openAfter!, open.calls, open.durationMs, idlePerSecond),
  });
  console.log(
    `${row(`create, open loop ${open.ratePerSec}/s`, open)} (at most ${open.maxInFlight} in flight)`,
  );

  // The reads and the replay, at the concurrency of the best create level, once the
  // consumers have worked off the creates' events: their backlog would land on the reads.
  await untilIdle();
  const mop = randomUUID();
  const created = JSON.parse(await call("POST", "/v1/payment", body(mop))) as { operation_id: string };
  const replay = await step("replay", () => call("POST", "/v1/payment", body(mop)), best.concurrency);
  console.log(row("replay (same key, body)", replay));
  const stateBody = JSON.stringify({ operation_id: created.operation_id });
  const state = await step(
    "get_state",
    () => call("POST", "/v1/get_operation_state", stateBody),
    best.concurrency,
  );
  console.log(row("get_operation_state", state));
  const balances = await step("balances", () => call("GET", "/v1/balances"), best.concurrency);
  console.log(row("GET /v1/balances", balances));

  console.log(
    "\nCPU per call by process over each window, less its idle CPU (/proc/<pid>/stat utime+stime; postgres: the backends of this database; the relays run inside operations and matching):",
  );
  console.log(
    `idle CPU ms per second: ${[...idlePerSecond].map(([l, s]) => `${l} ${(s * 1000).toFixed(1)}`).join(", ")}`,
  );
  console.log(formatCpuTable(cpuColumns));
  console.log(
    `\nPostgres commits per call over each window (the whole database: the sandbox provider's own writes included): ${commitColumns.map((c) => `${c.name} ${c.perCall.toFixed(2)}`).join(", ")}`,
  );
  console.log(
    `the gateway's alone (less one commit per create the sandbox provider received): ${commitColumns.map((c) => `${c.name} ${(c.perCall - c.sandbox).toFixed(2)}`).join(", ")}`,
  );
  console.log(
    `\nEvent-loop delay p99 / max ms and GC pause ms per second, by process, over the open loop at half the best rate: ${loops}`,
  );
  console.log("\nWrites per batched statement over each window, mean (statements):");
  for (const line of batchLines) console.log(line);
  const { createHash } = await import("node:crypto");
  const keyHash = createHash("sha256").update(shop.apiKey).digest("hex");
  // The running stack holds about 60 of the server's 100 connections in its pools, so
  // pgbench gets 16 clients; its throughput is flat well before that on two cores.
  const clients = Math.min(16, best.concurrency);
  // pgbench needs 16 connections more; on a server other work also uses it may get none.
  const pg = await pgbenchCreatePath(stack.databaseUrl, shop.shopId, keyHash, clients).catch((err: Error) => {
    console.log(`pgbench failed: ${err.message.split("\n").slice(-2).join(" ")}`);
    return { tps: Number.NaN, latency: Number.NaN };
  });
  console.log(
    `pgbench, the same create-path SQL (6 statements: 2 row writes + 1 outbox row) at ${clients} clients: ${pg.tps.toFixed(0)} creates/s (avg ${pg.latency.toFixed(2)} ms)`,
  );
  console.log(
    `ratio: the stack's best (${best.concurrency} in flight) is ${(best.callsPerSec / pg.tps).toFixed(3)} × what Postgres alone does for the same SQL`,
  );
  console.log(
    `at half the best rate, open loop: p99 ${open.p99Ms.toFixed(1)} ms; at ${results[0]?.concurrency} in flight: p50 ${results[0]?.p50Ms.toFixed(1)} ms`,
  );
  console.log(
    `replay rate ${(replay.callsPerSec / best.callsPerSec).toFixed(2)} × the best create rate; get_operation_state ${state.callsPerSec.toFixed(0)}/s; balances ${balances.callsPerSec.toFixed(0)}/s`,
  );
  console.log(`load average at end: ${(await readFile("/proc/loadavg", "utf8")).trim()}`);
  await agent.close();
} finally {
  await sql.end();
  await stack.stop();
}
