/**
 * The write-path baseline: the machine's `pgbench` running transactions of N row
 * inserts at 64 clients against a scratch database. What Postgres alone does here is
 * the ceiling any create path of ours can approach; print other figures against it
 * with `ratioToPgbench`.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface PgbenchOptions {
  /** Row writes per transaction (one INSERT each). */
  rowsPerTransaction?: number;
  clients?: number;
  /** Rounded to whole seconds, as pgbench takes them; at least one. */
  durationMs?: number;
  host?: string;
  port?: number;
  user?: string;
  pgbenchPath?: string;
}

export interface PgbenchResult {
  rowsPerTransaction: number;
  clients: number;
  durationMs: number;
  /** Transactions per second, without connection time. */
  tps: number;
  latencyAvgMs: number;
}

/**
 * Runs pgbench with a custom script in a scratch database it creates and drops. The
 * table is shaped like an operations row: a uuid key, an amount as numeric, a status,
 * a timestamp, and a primary key index.
 */
export async function runPgbench(options: PgbenchOptions = {}): Promise<PgbenchResult> {
  const rows = options.rowsPerTransaction ?? 3;
  const clients = options.clients ?? 64;
  const seconds = Math.max(1, Math.round((options.durationMs ?? 3_000) / 1000));
  const conn = {
    PGHOST: options.host ?? "127.0.0.1",
    PGPORT: String(options.port ?? 5432),
    PGUSER: options.user ?? "postgres",
  };
  const env = { ...process.env, ...conn };
  const database = `bench_${randomBytes(4).toString("hex")}`;
  const dir = await mkdtemp(path.join(os.tmpdir(), "pgbench-"));
  const psql = (db: string, sql: string) =>
    run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql], { env });

  await psql("postgres", `create database ${database}`);
  try {
    await psql(
      database,
      "create table bench_rows (id uuid primary key, amount numeric(40, 6) not null, status text not null, created_at timestamptz not null default now())",
    );
    const insert =
      "insert into bench_rows (id, amount, status) values (gen_random_uuid(), 100.50, 'pending');";
    const script = ["begin;", ...Array.from({ length: rows }, () => insert), "commit;", ""].join("\n");
    const scriptFile = path.join(dir, "writes.sql");
    await writeFile(scriptFile, script);
    const { stdout } = await run(
      options.pgbenchPath ?? "pgbench",
      ["-n", "-c", String(clients), "-j", "2", "-T", String(seconds), "-f", scriptFile, database],
      { env, timeout: (seconds + 30) * 1000 },
    );
    return { rowsPerTransaction: rows, clients, durationMs: seconds * 1000, ...parsePgbench(stdout) };
  } finally {
    await psql("postgres", `drop database if exists ${database} with (force)`).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

/** Reads tps and average latency from pgbench's summary. */
export function parsePgbench(stdout: string): { tps: number; latencyAvgMs: number } {
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(stdout)?.[1];
  if (tps === undefined || latency === undefined) throw new Error(`unexpected pgbench output:\n${stdout}`);
  return { tps: Number(tps), latencyAvgMs: Number(latency) };
}

/** A throughput as a fraction of the pgbench baseline, e.g. creates/s against its tps. */
export function ratioToPgbench(perSecond: number, baseline: PgbenchResult): number {
  return baseline.tps > 0 ? perSecond / baseline.tps : 0;
}
