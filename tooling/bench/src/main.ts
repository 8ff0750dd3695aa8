/**
 * `pnpm bench [name...] [--duration=ms] [--warmup=ms] [--levels=1,16,64] [--variants=a,b]
 * [--cpu-prof=dir] [--repeat=n]
 * [--node-flags='--max-semi-space-size=32']`: runs the named benchmarks (all when none is named) on loopback and
 * prints their figures. Each run is bounded: a few seconds per measured window.
 */
import os from "node:os";
import { parseArgs } from "node:util";
import { formatGrpcHop, type GrpcHopReport, medianOfRuns, runGrpcHop } from "./grpc-hop.ts";
import { runPgbench } from "./pgbench.ts";

const BENCHMARKS = ["grpc-hop", "pgbench"] as const;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    duration: { type: "string" },
    warmup: { type: "string" },
    levels: { type: "string" },
    variants: { type: "string" },
    "cpu-prof": { type: "string" },
    "node-flags": { type: "string" },
    repeat: { type: "string" },
  },
});
const names = positionals.length > 0 ? positionals : [...BENCHMARKS];
for (const name of names) {
  if (!(BENCHMARKS as readonly string[]).includes(name)) {
    console.error(`unknown benchmark ${name}; known: ${BENCHMARKS.join(", ")}`);
    process.exit(2);
  }
}
/** The report goes to stdout; the linter keeps console for debugging only. */
const print = (line = "") => process.stdout.write(`${line}\n`);
const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));

print(
  `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}, ${os.platform()} ${os.release()}, node ${process.version}`,
);
print(
  `load average: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}\n`,
);

for (const name of names) {
  if (name === "grpc-hop") {
    const repeat = Math.max(1, num(values.repeat) ?? 1);
    const runs: GrpcHopReport[][] = [];
    for (let i = 0; i < repeat; i++) {
      runs.push(
        await runGrpcHop({
          ...(values.levels ? { levels: values.levels.split(",").map(Number) } : {}),
          ...(values.duration ? { durationMs: num(values.duration) } : {}),
          ...(values.warmup ? { warmupMs: num(values.warmup) } : {}),
          ...(values.variants ? { variants: values.variants.split(",") } : {}),
          ...(values["cpu-prof"] ? { cpuProfDir: values["cpu-prof"] } : {}),
          ...(values["node-flags"] ? { nodeFlags: values["node-flags"].split(" ") } : {}),
        }),
      );
    }
    const reports = medianOfRuns(runs);
    print(
      `grpc-hop: unary calls over h2c on 127.0.0.1 (grpc.health.v1 Check; (f): MatchingService/GetPoolDepth with a service token), server and client in separate processes${repeat > 1 ? `, median of ${repeat} runs` : ""}`,
    );
    print(formatGrpcHop(reports));
    print();
  }
  if (name === "pgbench") {
    const result = await runPgbench(values.duration ? { durationMs: Number(values.duration) } : {});

    print(
      `pgbench: ${result.rowsPerTransaction} row writes per transaction, ${result.clients} clients, ${(result.durationMs / 1000).toFixed(0)} s: ${result.tps.toFixed(0)} tps (${(result.tps * result.rowsPerTransaction).toFixed(0)} rows/s), latency avg ${result.latencyAvgMs.toFixed(2)} ms\n`,
    );
  }
}
