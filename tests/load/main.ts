/**
 * The load suite: the whole stack on loopback under autocannon, bounded in time. Not a
 * test and not part of `pnpm test`; it prints figures and the overload verdict, and
 * exits 1 when the overload phase saw an answer outside the design (anything but 200,
 * 429 or 503, or a 429/503 without `Retry-After`), or when any process of the stack
 * exited without being asked to (the supervisor restarts it; the suite counts it).
 *
 *   pnpm --filter @gw/tests load [--replicas=3] [--duration=8000] [--soak=60000]
 *                                [--connections=32]
 *
 * Phases: (1) closed loop per endpoint at a fixed number of connections, (2) open loop
 * per endpoint at a fixed rate (half the closed-loop throughput), (3) pgbench beside it
 * as the baseline, every throughput printed as a ratio to it, (4) overload: the create
 * path at 150 % of its measured peak, (5) a soak at 60 % of the peak, reporting each
 * process's RSS growth and the p99 drift between its first and last 10 s.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { runPgbench } from "@gw/bench";
import { MerchantClient } from "../src/merchant.ts";
import { startTestStack, stopAndReportExits } from "../src/stack.ts";
import { type Endpoint, fire, type Run } from "./fire.ts";

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const replicas = Number(arg("replicas", process.env.E2E_REPLICAS ?? "1"));
const durationMs = Number(arg("duration", "8000"));
const soakMs = Number(arg("soak", "60000"));
const connections = Number(arg("connections", "32"));
const SLICE_MS = 10_000;
const uuid = () => crypto.randomUUID();

/** Resident memory of a process in bytes, from /proc; undefined when it is gone. */
function rss(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** The suite's report goes to stdout, line by line. */
const print = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (n: number, digits = 0) => n.toFixed(digits);
const codesText = (codes: Record<string, number>) =>
  Object.entries(codes)
    .map(([c, n]) => `${c}:${n}`)
    .join(" ");

print(
  `load suite: ${replicas} replica(s) per service, ${durationMs} ms per phase, soak ${soakMs} ms, ${connections} connections; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
// One shop drives the whole load, so its key may hold every slot of a replica (the
// default per-key share, a quarter, keeps other shops served; here there are none).
const stack = await startTestStack({
  replicas,
  extraEnv: { LOG_LEVEL: "warn", MAX_IN_FLIGHT_PER_KEY: "64" },
});
let exitCode = 0;
try {
  const shop = await stack.provisionShop({ name: "load" });
  const merchant = new MerchantClient(stack.urls.edge, shop.apiKey);
  // Operations to read back: get_operation_state asks for one of these at random.
  const known: string[] = [];
  for (let i = 0; i < 50; i++) {
    const mop = `seed-${uuid()}`;
    await merchant.createPayment({
      merchant_operation_id: mop,
      client_id: "load",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    known.push(mop);
  }
  const create: Endpoint = {
    name: "POST /v1/payment",
    method: "POST",
    path: "/v1/payment",
    body: () =>
      JSON.stringify({
        merchant_operation_id: `load-${uuid()}`,
        client_id: "load",
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
      }),
  };
  const endpoints: Endpoint[] = [
    create,
    {
      name: "POST /v1/get_operation_state",
      method: "POST",
      path: "/v1/get_operation_state",
      body: () => JSON.stringify({ merchant_operation_id: known[Math.floor(Math.random() * known.length)] }),
    },
    { name: "GET /v1/balances", method: "GET", path: "/v1/balances" },
    {
      name: "GET /v1/payment/availability",
      method: "GET",
      path: "/v1/payment/availability?method=WT_RUB_C2C&currency=RUB&min_amount=500.00&max_amount=5000.00",
    },
  ];

  const runs: Run[] = [];
  for (const ep of endpoints) {
    const closed = await fire(stack, shop.apiKey, ep, { mode: "closed", durationMs, connections });
    runs.push(closed);
    // Open loop: a fixed rate of half what the closed loop reached (at least 5/s), with
    // connections to spare so the rate, not the replies, paces the requests.
    const rate = Math.max(5, closed.okPerSec / 2);
    runs.push(
      await fire(stack, shop.apiKey, ep, {
        mode: `open ${fmt(rate)}/s`,
        durationMs,
        connections: connections * 2,
        rate,
      }),
    );
  }

  // The create path's peak: a closed loop with twice as many connections as one edge
  // replica admits at once (MAX_IN_FLIGHT, 64 by default), so the gateway, not the
  // client, bounds it.
  runs.push(await fire(stack, shop.apiKey, create, { mode: "closed 128", durationMs, connections: 128 }));

  const db = new URL(stack.databaseUrl);
  const pg = await runPgbench({
    clients: 16,
    durationMs: 5000,
    host: db.hostname,
    port: Number(db.port || 5432),
    user: decodeURIComponent(db.username || "postgres"),
  });

  print(
    `\npgbench baseline: ${pg.rowsPerTransaction} inserts per transaction, ${pg.clients} clients: ${fmt(pg.tps)} tps (avg ${fmt(pg.latencyAvgMs, 1)} ms)`,
  );
  print("endpoint                       | mode         | 200/s  | × pgbench | p50 ms | p99 ms | answers");
  for (const r of runs) {
    print(
      `${r.endpoint.padEnd(30)} | ${r.mode.padEnd(12)} | ${fmt(r.okPerSec).padStart(6)} | ${fmt(r.okPerSec / pg.tps, 3).padStart(9)} | ${fmt(r.p50).padStart(6)} | ${fmt(r.p99).padStart(6)} | ${codesText(r.codes)}${r.errors ? ` errors:${r.errors}` : ""}${r.timeouts ? ` timeouts:${r.timeouts}` : ""}`,
    );
  }

  // Overload: 150 % of the create path's peak, with connections enough that the rate, not
  // waiting connections, paces the offer.
  const peak = Math.max(...runs.filter((r) => r.endpoint === create.name).map((r) => r.okPerSec), 1);
  const over = await fire(stack, shop.apiKey, create, {
    mode: "150 %",
    durationMs: Math.max(durationMs, 10_000),
    // autocannon paces each connection at rate / connections: enough connections for
    // about 4 s of replies in flight, but not so many that each one's rate rounds away.
    connections: Math.min(512, Math.max(64, Math.ceil(peak * 1.5 * 4))),
    rate: peak * 1.5,
  });
  const unexpected = Object.entries(over.codes).filter(([c]) => !["200", "429", "503"].includes(c));
  print(
    `\noverload: POST /v1/payment offered ${fmt(peak * 1.5)}/s (150 % of ${fmt(peak)}/s): ${fmt(over.okPerSec)} 200/s, p50 ${fmt(over.p50)} ms, p99 ${fmt(over.p99)} ms, answers ${codesText(over.codes)}, socket errors ${over.errors}, timeouts ${over.timeouts}`,
  );
  const verdicts: string[] = [];
  if (unexpected.length > 0)
    verdicts.push(`answers outside 200/429/503: ${codesText(Object.fromEntries(unexpected))}`);
  const missingRetryAfter = [...runs, over].reduce((n, r) => n + r.missingRetryAfter, 0);
  if (missingRetryAfter > 0) verdicts.push(`${missingRetryAfter} 429/503 answers without Retry-After`);
  if (over.errors + over.timeouts > 0)
    verdicts.push(`${over.errors} socket errors and ${over.timeouts} timeouts (no answer at all)`);
  const shed = (over.codes["429"] ?? 0) + (over.codes["503"] ?? 0);
  print(
    `overload: ${shed} of ${Object.values(over.codes).reduce((a, b) => a + b, 0)} answers refused with 429/503 + Retry-After`,
  );
  print(
    verdicts.length === 0
      ? "overload verdict: only the designed answers appeared"
      : `overload verdict: NOT AS DESIGNED: ${verdicts.join("; ")}`,
  );
  if (verdicts.length > 0) exitCode = 1;

  // Soak: 60 % of peak, in slices of 10 s; RSS of every process before and after.
  const instances = await stack.instances();
  const before = new Map(instances.map((i) => [i.name, rss(stack.pid(i.name))]));
  const slices: Run[] = [];
  const soakRate = peak * 0.6;
  for (let t = 0; t < soakMs; t += SLICE_MS) {
    slices.push(
      await fire(stack, shop.apiKey, create, {
        mode: "soak",
        durationMs: Math.min(SLICE_MS, soakMs - t),
        connections: connections * 2,
        rate: soakRate,
      }),
    );
  }
  print(
    `\nsoak: POST /v1/payment at ${fmt(soakRate)}/s for ${soakMs / 1000} s; 200/s per 10 s slice: ${slices.map((s) => fmt(s.okPerSec)).join(", ")}`,
  );
  const first = slices[0]!;
  const last = slices[slices.length - 1]!;
  print(
    `p99 drift: first 10 s ${fmt(first.p99)} ms, last 10 s ${fmt(last.p99)} ms (× ${fmt(last.p99 / Math.max(first.p99, 1), 2)}); p99 per slice: ${slices.map((s) => fmt(s.p99)).join(", ")}`,
  );
  print("process             | RSS before MiB | after MiB | growth MiB");
  for (const i of instances) {
    const a = before.get(i.name);
    const b = rss(stack.pid(i.name));
    const mib = (n: number | undefined) => (n === undefined ? "gone" : fmt(n / 2 ** 20, 1));
    print(
      `${i.name.padEnd(19)} | ${mib(a).padStart(14)} | ${mib(b).padStart(9)} | ${a !== undefined && b !== undefined ? fmt((b - a) / 2 ** 20, 1).padStart(10) : "n/a"}`,
    );
  }
} finally {
  // A process that crashed and was restarted fails the suite (issue 17).
  if ((await stopAndReportExits(stack, print)) > 0) exitCode = 1;
}
process.exit(exitCode);
