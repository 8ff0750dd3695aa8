/**
 * The pool benchmark: a fresh database seeded with 100,000 open payouts, then p50/p99 of
 * availability, recommendations and admission at rising numbers in flight, admissions/s
 * when many payins compete for the same four payouts, and pgbench running the same
 * admission statement as the baseline for both.
 *
 * The engine is called in process over a real Postgres pool (16 connections), without
 * the gRPC hop (see docs/benchmarks.md for its cost). Reads at N in flight run N
 * limiters, as N replicas would: one replica answers a second concurrent read with
 * UNAVAILABLE at once, which would measure refusals, not reads.
 *
 * Run: `pnpm --filter @gw/matching bench` (options --duration=ms --warmup=ms).
 * Loopback only; every loop is bounded by the measured window.
 */
import { execFile } from "node:child_process";
import { randomInt, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { type Measurement, measure, parsePgbench } from "@gw/bench";
import { connect, createTestDatabase, migrateSchema } from "@gw/db";
import { migrationsFolder } from "../src/app.ts";
import { formatCents, METHOD_MINIMUMS, toCents } from "../src/policy.ts";
import { admissionSql, PoolStore } from "../src/pool.ts";
import { PoolReads, ReadLimiter } from "../src/reads.ts";

const run = promisify(execFile);
/** The report goes to stdout; the linter keeps console for debugging only. */
const print = (line = "") => process.stdout.write(`${line}\n`);
const arg = (name: string, fallback: number) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : Number(found.split("=")[1]);
};
const DURATION_MS = arg("duration", 3000);
const WARMUP_MS = arg("warmup", 500);
const POOL_PAYOUTS = arg("payouts", 100_000);
const LEVELS = [1, 8, 32];
/** Database connections of the bench and pgbench clients: the server is shared (max_connections 100). */
const CONNECTIONS = 16;
const CONTENDED_PAYOUTS = 4;

const database = await createTestDatabase();
const { sql, db } = connect(database.url, { max: CONNECTIONS, application: "matching-bench" });
const rows: string[] = [];

try {
  await migrateSchema(sql, db, "matching", migrationsFolder);
  print(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, node ${process.version}`,
  );

  // 100,000 open card-rail payouts of 1,000.00 to 100,000.00 with distinct ages, and a
  // few very large phone-rail payouts for the contended run.
  const seedStart = performance.now();
  await sql`
    insert into matching.pool_payouts
      (operation_id, shop_id, method, currency, amount, free_amount, number, name, window_ends_at, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'WT_RUB_C2C', 'RUB', a, a, '4111111111111111', 'BENCH',
      now() + interval '1 day', now() - interval '1 day' + g * interval '1 millisecond'
    from generate_series(1, ${POOL_PAYOUTS}::int) g,
      lateral (select round((1000 + random() * 99000)::numeric, 2) + 0 * g as a) amounts`;
  await sql`
    insert into matching.pool_payouts
      (operation_id, shop_id, method, currency, amount, free_amount, number, name, window_ends_at)
    select gen_random_uuid(), gen_random_uuid(), 'WT_RUB_PHONE', 'RUB', 100000000, 100000000, '79990000000',
      'BENCH', now() + interval '1 day'
    from generate_series(1, ${CONTENDED_PAYOUTS}::int)`;
  // Vacuum sets the visibility map, as autovacuum would, so the scans run index-only.
  await sql`vacuum analyze matching.pool_payouts`;
  print(`seeded ${POOL_PAYOUTS} payouts in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  const store = new PoolStore(sql, "bench");
  const minimum = toCents(METHOD_MINIMUMS.WT_RUB_C2C);
  const cents = (lo: number, hi: number) => BigInt(randomInt(lo, hi));
  /** N readers with a limiter each, lent to one call at a time: N in flight, N replicas. */
  const readerPool = (count: number) => {
    const idle = Array.from({ length: count }, () => new PoolReads(store, new ReadLimiter(), 2000));
    return async <T>(call: (reads: PoolReads) => Promise<T>): Promise<T> => {
      const reads = idle.pop();
      if (reads === undefined) throw new Error("more calls in flight than readers");
      try {
        return await call(reads);
      } finally {
        idle.push(reads);
      }
    };
  };
  const report = (name: string, m: Measurement) => {
    const line = `| ${name} | ${m.concurrency} | ${m.callsPerSec.toFixed(0)} | ${m.p50Ms.toFixed(2)} | ${m.p99Ms.toFixed(2)} | ${m.errors} |`;
    rows.push(line);
    print(line);
  };
  print("| what | in flight | calls/s | p50 ms | p99 ms | errors |");
  print("|---|---|---|---|---|---|");

  for (const concurrency of LEVELS) {
    // One limiter per worker: N in flight stand for N replicas (see the header).
    const readers = readerPool(concurrency);
    const m = await measure(
      () => {
        const lo = cents(100_00, 80_000_00);
        return readers((reads) =>
          reads.availability({
            method: "WT_RUB_C2C",
            currency: "RUB",
            lo,
            hi: lo + cents(0, 20_000_00),
            minimum,
            coverage: "full",
          }),
        );
      },
      { concurrency, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
    );
    report("availability", m);
  }

  for (const concurrency of LEVELS) {
    const readers = readerPool(concurrency);
    const m = await measure(
      () => {
        const amount = cents(100_00, 100_000_00);
        return readers((reads) =>
          reads.recommendations({
            method: "WT_RUB_C2C",
            currency: "RUB",
            amount,
            lo: amount / 2n < 100_00n ? 100_00n : amount / 2n,
            hi: amount * 2n,
            minimum,
            coverage: "full",
            limit: 3,
          }),
        );
      },
      { concurrency, durationMs: DURATION_MS, warmupMs: WARMUP_MS },
    );
    report("recommendations", m);
  }

  const admit = (method: string) => async () => {
    const res = await store.admit({
      payinId: randomUUID(),
      shopId: randomUUID(),
      method,
      currency: "RUB",
      amount: formatCents(cents(100_00, 5_000_00)),
      minimum: METHOD_MINIMUMS.WT_RUB_C2C,
      slotLifetimeMs: 600_000,
      generation: 1,
    });
    if ("refused" in res) throw new Error(`admission refused: ${res.refused}`);
  };
  const admissions: Measurement[] = [];
  for (const concurrency of LEVELS) {
    const m = await measure(admit("WT_RUB_C2C"), {
      concurrency,
      durationMs: DURATION_MS,
      warmupMs: WARMUP_MS,
    });
    admissions.push(m);
    report("admission, 100k pool", m);
  }
  const contended: Measurement[] = [];
  for (const concurrency of [16, 32]) {
    const m = await measure(admit("WT_RUB_PHONE"), {
      concurrency,
      durationMs: DURATION_MS,
      warmupMs: WARMUP_MS,
    });
    contended.push(m);
    report(`admission, ${CONTENDED_PAYOUTS} payouts contended`, m);
  }

  // pgbench runs the same admission statement (the skip-locked try, which is the whole
  // path of a successful admission) at 16 clients, against the same database.
  const slotCount = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from matching.slots`)[0]?.n ?? 0;
  const baseline = async (method: string, skipLocked: boolean) => {
    const before = await slotCount();
    const dir = await mkdtemp(path.join(os.tmpdir(), "pool-pgbench-"));
    try {
      const statement = admissionSql(skipLocked)
        .replaceAll("$1::text", `'${method}'::text`)
        .replaceAll("$2::text", "'RUB'::text")
        .replaceAll("$3::numeric", "(:amt::numeric / 100)")
        .replaceAll("$4::numeric", `${METHOD_MINIMUMS.WT_RUB_C2C}::numeric`)
        .replaceAll("$5::uuid", "('00000000-0000-4000-8000-' || lpad(to_hex(:pid::bigint), 12, '0'))::uuid")
        .replaceAll("$6::uuid", "gen_random_uuid()")
        .replaceAll("$7::int", "600000")
        .replaceAll("$8::bigint", "1")
        // pgbench reads ":MI" and ":SS" inside the format string as variables: the
        // timestamp goes out as plain text here, a negligible difference.
        .replace(/to_char\(s\.expires_at[^)]*\)/, "s.expires_at::text")
        .replace(/\s+/g, " ")
        .trim();
      const script = [
        "\\set amt random(10000, 500000)",
        "\\set pid random(1, 140737488355327)",
        `${statement};`,
        "",
      ];
      const file = path.join(dir, "admit.sql");
      await writeFile(file, script.join("\n"));
      const url = new URL(database.url);
      const seconds = Math.max(1, Math.round(DURATION_MS / 1000));
      const { stdout } = await run(
        "/usr/bin/pgbench",
        [
          "-n",
          "-M",
          "prepared",
          "-c",
          "16",
          "-j",
          "2",
          "-T",
          String(seconds),
          "-f",
          file,
          url.pathname.slice(1),
        ],
        {
          env: {
            ...process.env,
            PGHOST: url.hostname,
            PGPORT: url.port || "5432",
            PGUSER: url.username || "postgres",
          },
          timeout: (seconds + 30) * 1000,
        },
      );
      const admitted = (await slotCount()) - before;
      return { ...parsePgbench(stdout), admissionsPerSec: admitted / seconds, skipLocked };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
  const free = await baseline("WT_RUB_C2C", true);
  // Under contention the skip-locked statement alone often admits nothing (every fitting
  // payout locked); the engine then waits for a lock. The baseline is the better of the
  // two forms, counted in admissions (slots written), not in statements.
  const busy = [await baseline("WT_RUB_PHONE", true), await baseline("WT_RUB_PHONE", false)];
  const busyBest = busy.reduce((a, b) => (b.admissionsPerSec > a.admissionsPerSec ? b : a));
  const best = (list: Measurement[]) => Math.max(...list.map((m) => m.callsPerSec));
  const lines = [
    `pgbench, same admission SQL, 16 clients, 100k pool: ${free.admissionsPerSec.toFixed(0)} admissions/s (${free.tps.toFixed(0)} tps, avg ${free.latencyAvgMs.toFixed(2)} ms); engine best ${best(admissions).toFixed(0)}/s = ${(best(admissions) / free.admissionsPerSec).toFixed(2)} × pgbench`,
    ...busy.map(
      (b) =>
        `pgbench, same admission SQL (${b.skipLocked ? "skip locked" : "waiting for the lock"}), 16 clients, ${CONTENDED_PAYOUTS} payouts contended: ${b.admissionsPerSec.toFixed(0)} admissions/s (${b.tps.toFixed(0)} tps, avg ${b.latencyAvgMs.toFixed(2)} ms)`,
    ),
    `contended: engine best ${best(contended).toFixed(0)}/s = ${(best(contended) / busyBest.admissionsPerSec).toFixed(2)} × the better pgbench form`,
  ];
  for (const line of lines) print(line);
  const [slots] = await sql<{ n: number; over: number }[]>`
    select count(*)::int as n,
      (select count(*)::int from matching.pool_payouts where free_amount + reserved_amount + paid_amount + handed_off_amount <> amount) as over
    from matching.slots`;
  print(`slots reserved by the run: ${slots?.n}; payouts whose parts do not add up: ${slots?.over}`);
} finally {
  await sql.end({ timeout: 5 });
  await database.drop();
}
