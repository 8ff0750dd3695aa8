/**
 * CPU time of every process of a test stack over a measured window, read from
 * `/proc/<pid>/stat` (utime + stime) at the window's start and end: each service process,
 * the Postgres backends serving the stack's database (`pg_stat_activity`), this process
 * (the load generator), and the shared servers' other processes: every `nats-server`
 * (JetStream stores, delivers and takes the acks of every event) and Postgres's own
 * processes (WAL writer, checkpointer, other backends). Figures are per call of the measured step, so a change's
 * gain shows per process even on a machine shared with other work, where throughput and
 * latency say little.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type postgres from "postgres";
import type { TestStack } from "../src/stack.ts";

/** Clock ticks per second of the /proc figures (USER_HZ, nearly always 100). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system) a process has used, or undefined when it is gone. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    // The command name (field 2) may hold spaces: the fields after it start past ") ".
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Labels of the shared servers' processes: printed apart, outside the gateway's total. */
export const SHARED_LABELS = ["nats-server", "postgres, other processes"];

/** Pids of this machine's processes by command name (`/proc/<pid>/comm`). */
function pidsNamed(names: string[]): { pid: number; name: string }[] {
  const out: { pid: number; name: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const name = readFileSync(`/proc/${entry}/comm`, "utf8").trim();
      if (names.includes(name)) out.push({ pid: Number(entry), name });
    } catch {
      // The process ended while the list was read.
    }
  }
  return out;
}

/** CPU seconds by label: one per stack process, `postgres` for the backends, `bench client`. */
export type CpuSnapshot = Map<string, { seconds: number; pids: Map<number, number> }>;

/**
 * Every process's CPU seconds now. The Postgres backends are keyed by pid, so one that
 * connected inside the window counts from zero and one that left it drops out.
 */
export async function snapshotCpu(stack: TestStack, sql: postgres.Sql): Promise<CpuSnapshot> {
  const out: CpuSnapshot = new Map();
  const add = (label: string, pid: number) => {
    const seconds = processCpuSeconds(pid);
    if (seconds === undefined) return;
    const entry = out.get(label) ?? { seconds: 0, pids: new Map() };
    entry.pids.set(pid, seconds);
    entry.seconds += seconds;
    out.set(label, entry);
  };
  for (const i of await stack.instances()) {
    const pid = stack.pid(i.name);
    if (pid !== undefined) add(i.name, pid);
  }
  const backends = await sql<{ pid: number; own: boolean }[]>`
    select pid, pid = pg_backend_pid() as own from pg_stat_activity where datname = current_database()`;
  for (const { pid, own } of backends) if (!own) add("postgres backends", pid);
  add("bench client", process.pid);
  const counted = new Set(backends.map((b) => b.pid));
  for (const { pid, name } of pidsNamed(["nats-server", "postgres"])) {
    if (name === "nats-server") add("nats-server", pid);
    else if (!counted.has(pid)) add("postgres, other processes", pid);
  }
  return out;
}

/** CPU seconds by label between two snapshots. */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): Map<string, number> {
  const out = new Map<string, number>();
  for (const [label, a] of after) {
    const b = before.get(label);
    let seconds = 0;
    for (const [pid, s] of a.pids) seconds += s - (b?.pids.get(pid) ?? 0);
    out.set(label, seconds);
  }
  return out;
}

/**
 * Milliseconds of CPU per call, by label, between two snapshots `windowMs` apart, less
 * what the process spends idle (`idlePerSecond`: pollers, timers, heartbeats) over as
 * long. Without that, a slower run would show more CPU per create only because the idle
 * work is spread over fewer creates.
 */
export function cpuPerCall(
  before: CpuSnapshot,
  after: CpuSnapshot,
  calls: number,
  windowMs: number,
  idlePerSecond: Map<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [label, seconds] of cpuBetween(before, after)) {
    const busy = seconds - (idlePerSecond.get(label) ?? 0) * (windowMs / 1000);
    out.set(label, calls > 0 ? (busy * 1000) / calls : 0);
  }
  return out;
}

/** The order lines are printed in: services as started, then Postgres, the sandbox, the client. */
const ORDER = [
  "edge",
  "operations",
  "ledger",
  "matching",
  "webhooks",
  "receipts",
  "checkout",
  "postgres backends",
  "sandbox-provider",
  "bench client",
  ...SHARED_LABELS,
];
const rank = (label: string) => {
  const i = ORDER.indexOf(label.split("#")[0]!);
  return i < 0 ? ORDER.length : i;
};

/**
 * A table of CPU ms per call: one row per process, one column per step. The gateway's
 * total leaves out the sandbox (it stands for an external provider), the client and the
 * shared servers' other processes (`SHARED_LABELS`), which follow it on lines of their own.
 */
export function formatCpuTable(columns: { name: string; perCall: Map<string, number> }[]): string {
  const labels = [...new Set(columns.flatMap((c) => [...c.perCall.keys()]))].sort(
    (a, b) => rank(a) - rank(b) || a.localeCompare(b),
  );
  const width = Math.max(...columns.map((c) => c.name.length), 9);
  const cell = (v: number | undefined) => (v === undefined ? "" : v.toFixed(3)).padStart(width);
  const lines = [
    `${"CPU ms per call".padEnd(28)} | ${columns.map((c) => c.name.padStart(width)).join(" | ")}`,
  ];
  const total = (c: (typeof columns)[number], keep: (l: string) => boolean) =>
    [...c.perCall].filter(([l]) => keep(l)).reduce((s, [, v]) => s + v, 0);
  const gateway = (l: string) =>
    !l.startsWith("sandbox") && l !== "bench client" && !SHARED_LABELS.includes(l);
  for (const label of labels.filter(gateway))
    lines.push(`${label.padEnd(28)} | ${columns.map((c) => cell(c.perCall.get(label))).join(" | ")}`);
  lines.push(`${"gateway total".padEnd(28)} | ${columns.map((c) => cell(total(c, gateway))).join(" | ")}`);
  for (const label of labels.filter((l) => !gateway(l)))
    lines.push(`${label.padEnd(28)} | ${columns.map((c) => cell(c.perCall.get(label))).join(" | ")}`);
  return lines.join("\n");
}
