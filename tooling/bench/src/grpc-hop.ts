/**
 * The internal gRPC hop benchmark: one server process and one client process on
 * loopback, a unary grpc.health.v1 Check in a closed loop at several levels of calls
 * in flight, for each variant of HOP_VARIANTS. See docs/benchmarks.md.
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import {
  BENCH_KEYS_ENV,
  HOP_VARIANTS,
  type HopLevelResult,
  type HopMessage,
  type HopVariant,
} from "./grpc-hop-shared.ts";

export interface GrpcHopOptions {
  /** Calls in flight, one measured window each. */
  levels?: number[];
  durationMs?: number;
  warmupMs?: number;
  /** Names from HOP_VARIANTS; all by default. */
  variants?: string[];
  /** Writes V8 CPU profiles of both processes into this folder. */
  cpuProfDir?: string;
  /** Extra `node` flags for both processes, e.g. `--max-semi-space-size=32`. */
  nodeFlags?: string[];
}

export interface GrpcHopReport {
  variant: HopVariant;
  levels: HopLevelResult[];
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
/** A child that does not answer within this time is killed: runs stay bounded. */
const CHILD_GRACE_MS = 30_000;

/** Runs the variants one after another, each with a fresh server and client process. */
export async function runGrpcHop(options: GrpcHopOptions = {}): Promise<GrpcHopReport[]> {
  const levels = options.levels ?? [1, 16, 64, 256];
  const durationMs = options.durationMs ?? 2_000;
  const warmupMs = options.warmupMs ?? 500;
  const wanted = (options.variants ?? HOP_VARIANTS.filter((v) => !v.extra).map((v) => v.name)).map(
    (name) => HOP_VARIANTS.find((v) => v.letter === name)?.name ?? name,
  );
  const unknown = wanted.filter((name) => !HOP_VARIANTS.some((v) => v.name === name));
  if (unknown.length > 0) throw new Error(`unknown variant(s) ${unknown.join(", ")}`);
  const reports: GrpcHopReport[] = [];
  for (const variant of HOP_VARIANTS.filter((v) => wanted.includes(v.name))) {
    const execArgv = [
      ...(options.nodeFlags ?? []),
      ...(options.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`] : []),
    ];
    reports.push({ variant, levels: await runVariant(variant, levels, durationMs, warmupMs, execArgv) });
  }
  return reports;
}

async function runVariant(
  variant: HopVariant,
  levels: number[],
  durationMs: number,
  warmupMs: number,
  execArgv: string[],
): Promise<HopLevelResult[]> {
  const env = { ...process.env, [BENCH_KEYS_ENV]: `bench:${randomBytes(32).toString("base64url")}` };
  const server = fork(here("./grpc-hop-server.ts"), [variant.server], { execArgv, env, stdio: "inherit" });
  const deadline = levels.length * (durationMs + warmupMs) + CHILD_GRACE_MS;
  const killer = setTimeout(() => server.kill("SIGKILL"), deadline);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.once("exit", (code) => reject(new Error(`bench server exited with ${code}`)));
      server.on("message", (msg: HopMessage) => msg.t === "ready" && resolve(msg.port));
    });
    const client = fork(
      here("./grpc-hop-client.ts"),
      [
        variant.client,
        String(port),
        levels.join(","),
        String(durationMs),
        String(warmupMs),
        String(variant.sessions ?? 0),
      ],
      { execArgv, env, stdio: "inherit" },
    );
    const clientKiller = setTimeout(() => client.kill("SIGKILL"), deadline);
    try {
      return await collect(client, server);
    } finally {
      clearTimeout(clientKiller);
    }
  } finally {
    clearTimeout(killer);
    await stop(server);
  }
}

/** Relays the client's CPU marks to the server and gathers the client's results. */
function collect(client: ChildProcess, server: ChildProcess): Promise<HopLevelResult[]> {
  const results: HopLevelResult[] = [];
  return new Promise((resolve, reject) => {
    client.once("error", reject);
    client.once("exit", (code) =>
      code === 0 ? resolve(results) : reject(new Error(`bench client exited with ${code}`)),
    );
    client.on("message", (msg: HopMessage) => {
      if (msg.t === "result") results.push(msg.result);
      if (msg.t === "mark") {
        server.once("message", (reply: HopMessage) => {
          if (reply.t === "cpu" && reply.usage) client.send({ t: "marked", id: msg.id, usage: reply.usage });
        });
        server.send({ t: "cpu" } satisfies HopMessage);
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  if (child.connected) child.send({ t: "stop" } satisfies HopMessage);
  else child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Merges repeated runs of the same variants field by field into their medians, so one
 * noisy window on a shared machine does not decide a figure.
 */
export function medianOfRuns(runs: GrpcHopReport[][]): GrpcHopReport[] {
  const first = runs[0] ?? [];
  return first.map((report, r) => ({
    variant: report.variant,
    levels: report.levels.map((level, l) => {
      const samples = runs
        .map((run) => run[r]?.levels[l])
        .filter((x): x is HopLevelResult => x !== undefined);
      const median = (pick: (x: HopLevelResult) => number) => {
        const sorted = samples.map(pick).sort((a, b) => a - b);
        const mid = Math.floor(sorted.length / 2);
        return sorted.length % 2 === 1
          ? (sorted[mid] ?? 0)
          : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
      };
      return {
        ...level,
        durationMs: median((x) => x.durationMs),
        calls: median((x) => x.calls),
        errors: samples.reduce((sum, x) => sum + x.errors, 0),
        callsPerSec: median((x) => x.callsPerSec),
        p50Ms: median((x) => x.p50Ms),
        p99Ms: median((x) => x.p99Ms),
        p999Ms: median((x) => x.p999Ms),
        maxMs: median((x) => x.maxMs),
        cpuPercent: median((x) => x.cpuPercent),
        serverCpuPercent: median((x) => x.serverCpuPercent),
      };
    }),
  }));
}

/** A table of the reports with throughput ratios against the first (baseline) variant. */
export function formatGrpcHop(reports: GrpcHopReport[]): string {
  const baseline = reports.find((r) => r.variant.name === "baseline") ?? reports[0];
  const lines: string[] = [];
  const head = [
    "variant",
    "in flight",
    "calls/s",
    "x base",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "client CPU%",
    "server CPU%",
    "client µs/call",
    "server µs/call",
    "errors",
  ];
  lines.push(head.join(" | "));
  for (const report of reports) {
    for (const level of report.levels) {
      const base = baseline?.levels.find((l) => l.concurrency === level.concurrency);
      lines.push(
        [
          report.variant.label,
          level.concurrency,
          level.callsPerSec.toFixed(0),
          base && base.callsPerSec > 0 ? (level.callsPerSec / base.callsPerSec).toFixed(2) : "-",
          level.p50Ms.toFixed(2),
          level.p99Ms.toFixed(2),
          level.p999Ms.toFixed(2),
          level.cpuPercent.toFixed(0),
          level.serverCpuPercent.toFixed(0),
          cpuPerCall(level.cpuPercent, level.callsPerSec),
          cpuPerCall(level.serverCpuPercent, level.callsPerSec),
          level.errors > 0 ? `${level.errors} (${level.firstError})` : "0",
        ].join(" | "),
      );
    }
  }
  return lines.join("\n");
}

/** CPU time per call in microseconds, from percent of a core and calls per second. */
function cpuPerCall(percent: number, callsPerSec: number): string {
  return callsPerSec > 0 ? ((percent / 100 / callsPerSec) * 1e6).toFixed(0) : "-";
}
