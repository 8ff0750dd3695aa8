/**
 * Where the time of one `POST /v1/payment` goes, hop by hop, on an otherwise idle stack:
 * sequential creates (one in flight), then the difference of every service's metrics
 * (`http_server_duration_seconds`, `rpc_client_duration_seconds`,
 * `rpc_server_duration_seconds`, `provider_request_duration_seconds`) over the window,
 * divided by the number of creates, and the commits and row writes the test database
 * saw per create (`pg_stat_database`, `pg_stat_user_tables`: everything the services did,
 * the sandbox, the outbox relays and the consumers included). Then the sandbox provider
 * alone, called directly the way operations calls it. Not a test: nothing here asserts a
 * time.
 *
 *   pnpm --filter @gw/tests bench:hops [--creates=300]   (PROF_DIR=<dir> for CPU profiles)
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import postgres from "postgres";
import { Agent, request } from "undici";
import { startTestStack } from "../src/stack.ts";

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const creates = Number(arg("creates", "300"));

type Sums = Map<string, { sum: number; count: number }>;

/** `<name>_sum` and `<name>_count` of every histogram series, keyed by name and labels. */
async function scrape(port: number): Promise<Sums> {
  const res = await request(`http://127.0.0.1:${port}/metrics`);
  const text = await res.body.text();
  const out: Sums = new Map();
  for (const line of text.split("\n")) {
    const cpu = /^process_cpu_seconds_total ([\d.e+-]+)$/.exec(line);
    if (cpu) out.set("process_cpu_seconds_total", { sum: Number(cpu[1]), count: 0 });
    const m = /^(\w+)_(sum|count)(\{[^}]*\})? ([\d.e+-]+)$/.exec(line);
    if (!m) continue;
    const key = `${m[1]}${m[3] ?? ""}`;
    const entry = out.get(key) ?? { sum: 0, count: 0 };
    if (m[2] === "sum") entry.sum = Number(m[4]);
    else entry.count = Number(m[4]);
    out.set(key, entry);
  }
  return out;
}

// PROF_DIR=<dir>: every service writes a V8 CPU profile there when the stack stops.
const profDir = process.env.PROF_DIR;
const stack = await startTestStack({
  extraEnv: {
    LOG_LEVEL: "warn",
    ...(profDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profDir}` } : {}),
  },
});
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
try {
  const shop = await stack.provisionShop({ name: "hops" });
  const agent = new Agent({ connections: 4, keepAliveTimeout: 30_000 });
  const create = async () => {
    const res = await request(`${stack.urls.edge}/v1/payment`, {
      method: "POST",
      dispatcher: agent,
      headers: { "x-api-key": shop.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        merchant_operation_id: randomUUID(),
        client_id: "bench",
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
      }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${text.slice(0, 200)}`);
  };
  const instances = await stack.instances();
  const snapshot = async () => {
    const metrics = new Map<string, Sums>();
    for (const i of instances) metrics.set(i.name, await scrape(i.metricsPort));
    const [db] = await sql<{ xact_commit: string; xact_rollback: string }[]>`
      select xact_commit, xact_rollback from pg_stat_database where datname = current_database()`;
    const tables = await sql<{ name: string; ins: string; upd: string; del: string }[]>`
      select schemaname || '.' || relname as name, n_tup_ins as ins, n_tup_upd as upd, n_tup_del as del
      from pg_stat_user_tables`;
    // CPU of the Postgres backends serving this database (utime + stime, in clock ticks).
    const pids = await sql<{ pid: number; app: string }[]>`
      select pid, application_name as app from pg_stat_activity where datname = current_database()`;
    const pgCpu = new Map<number, { app: string; ticks: number }>();
    for (const { pid, app } of pids) {
      try {
        const stat = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
        pgCpu.set(pid, { app, ticks: Number(stat[11]) + Number(stat[12]) });
      } catch {}
    }
    return { metrics, db, tables, pgCpu };
  };

  for (let i = 0; i < 50; i++) await create();
  // Let the relays and consumers of the warm-up finish, and the statistics settle.
  await new Promise((r) => setTimeout(r, 1500));
  const before = await snapshot();
  const latencies: number[] = [];
  for (let i = 0; i < creates; i++) {
    const started = performance.now();
    await create();
    const ended = performance.now();
    latencies.push(ended - started);
  }
  await new Promise((r) => setTimeout(r, 1500));
  const after = await snapshot();
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
  console.log(
    `${creates} sequential creates: mean ${mean.toFixed(2)} ms, p50 ${latencies[Math.floor(creates / 2)]!.toFixed(2)} ms, p99 ${latencies[Math.floor(creates * 0.99)]!.toFixed(2)} ms`,
  );
  console.log("\nper create (mean over the window), by process and series:");
  for (const [name, sums] of after.metrics) {
    const base = before.metrics.get(name) ?? new Map();
    for (const [key, v] of sums) {
      if (!/duration_seconds/.test(key)) continue;
      const b = base.get(key) ?? { sum: 0, count: 0 };
      const count = v.count - b.count;
      if (count <= 0) continue;
      const ms = ((v.sum - b.sum) / count) * 1000;
      console.log(
        `  ${name.padEnd(17)} ${key.padEnd(110)} ${(count / creates).toFixed(2).padStart(5)}×  ${ms.toFixed(2).padStart(7)} ms`,
      );
    }
  }
  console.log("\nCPU per create (process_cpu_seconds_total; Postgres backends by application_name):");
  let totalCpu = 0;
  for (const [name, sums] of after.metrics) {
    const ms =
      (((sums.get("process_cpu_seconds_total")?.sum ?? 0) -
        (before.metrics.get(name)?.get("process_cpu_seconds_total")?.sum ?? 0)) *
        1000) /
      creates;
    totalCpu += ms;
    console.log(`  ${name.padEnd(30)} ${ms.toFixed(2).padStart(7)} ms`);
  }
  const pgByApp = new Map<string, number>();
  for (const [pid, { app, ticks }] of after.pgCpu) {
    const b = before.pgCpu.get(pid)?.ticks ?? 0;
    pgByApp.set(app, (pgByApp.get(app) ?? 0) + ((ticks - b) * 10) / creates);
  }
  for (const [app, ms] of pgByApp) {
    totalCpu += ms;
    console.log(`  postgres: ${app.padEnd(20)} ${ms.toFixed(2).padStart(7)} ms`);
  }
  console.log(
    `  total ${totalCpu.toFixed(2)} ms (2 cores: at most ~${(2000 / totalCpu).toFixed(0)} creates/s)`,
  );
  const commits = Number(after.db!.xact_commit) - Number(before.db!.xact_commit);
  console.log(
    `\ndatabase: ${(commits / creates).toFixed(2)} commits per create (every transaction of every service, reads included, and this script's 2 snapshot reads)`,
  );
  const beforeTables = new Map(before.tables.map((t) => [t.name, t]));
  for (const t of after.tables) {
    const b = beforeTables.get(t.name);
    const ins = Number(t.ins) - Number(b?.ins ?? 0);
    const upd = Number(t.upd) - Number(b?.upd ?? 0);
    const del = Number(t.del) - Number(b?.del ?? 0);
    if (ins + upd + del === 0) continue;
    console.log(
      `  ${t.name.padEnd(36)} ins ${(ins / creates).toFixed(2)}  upd ${(upd / creates).toFixed(2)}  del ${(del / creates).toFixed(2)}`,
    );
  }

  // The sandbox provider alone, as operations calls it (one POST per create).
  const [provider] = await sql<{ base_url: string; credentials: string }[]>`
    select base_url, credentials from operations.providers where name = ${shop.provider}`;
  const url = `${provider!.base_url}/providers/${shop.provider}/v1/payins`;
  const sandboxCall = async (dispatcher?: Agent) => {
    const res = await request(url, {
      method: "POST",
      ...(dispatcher ? { dispatcher } : {}),
      headers: {
        authorization: `Bearer ${provider!.credentials}`,
        accept: "application/json",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        reference: randomUUID(),
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
        callback_url: "http://127.0.0.1:9/unused",
      }),
    });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`sandbox answered ${res.statusCode}`);
  };
  const timeIt = async (label: string, call: () => Promise<void>, n = 200) => {
    for (let i = 0; i < 20; i++) await call();
    const started = performance.now();
    for (let i = 0; i < n; i++) await call();
    console.log(`  ${label}: ${((performance.now() - started) / n).toFixed(2)} ms per call`);
  };
  console.log("\nthe sandbox provider alone (POST payins, sequential):");
  await timeIt("undici global dispatcher (as the connector calls it)", () => sandboxCall());
  const fresh = async () => {
    const a = new Agent({ pipelining: 0 });
    await sandboxCall(a);
    await a.close();
  };
  await timeIt("a new TCP connection per call", fresh, 100);
  await agent.close();
} finally {
  await sql.end();
  await stack.stop();
}
