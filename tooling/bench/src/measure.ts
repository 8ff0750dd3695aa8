import { performance } from "node:perf_hooks";

/** One call of a closed loop: it starts when the previous call of its worker ended. */
export type ClosedLoop = () => Promise<unknown>;

export interface MeasureOptions {
  /** Calls in flight: this many workers each call `closedLoop` back to back. */
  concurrency: number;
  /** Length of the measured window. */
  durationMs: number;
  /** Load before the window that is not recorded (connections, JIT, pools). */
  warmupMs?: number;
  /** Runs when the measured window opens, e.g. to snapshot a peer's CPU time. */
  onWindowStart?: () => unknown;
  /** Runs when the measured window closes, before the calls in flight drain. */
  onWindowEnd?: () => unknown;
}

export interface Measurement {
  concurrency: number;
  /** Actual length of the measured window. */
  durationMs: number;
  /** Calls that succeeded and ended inside the window. */
  calls: number;
  /** Calls that failed inside the window. */
  errors: number;
  /** The first failure seen, for the report. */
  firstError?: string;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** CPU time of this process over the window, in percent of one core. */
  cpuPercent: number;
}

/**
 * Runs a closed loop at a fixed number of calls in flight and reports throughput,
 * latency percentiles of the successful calls, and this process's CPU use. Load runs
 * through warm-up and window without a pause, so the window sees a steady state.
 */
export async function measure(closedLoop: ClosedLoop, options: MeasureOptions): Promise<Measurement> {
  if (!(options.concurrency >= 1) || !(options.durationMs > 0)) {
    throw new Error("measure needs concurrency >= 1 and durationMs > 0");
  }
  let recording = false;
  let stopped = false;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;

  const worker = async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        await closedLoop();
        if (recording) latencies.push(performance.now() - started);
      } catch (err) {
        if (recording) {
          errors++;
          firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }
  };
  const workers = Array.from({ length: options.concurrency }, worker);

  await sleep(options.warmupMs ?? 0);
  await options.onWindowStart?.();
  const cpuStart = process.cpuUsage();
  const wallStart = performance.now();
  recording = true;
  await sleep(options.durationMs);
  recording = false;
  const durationMs = performance.now() - wallStart;
  const cpu = process.cpuUsage(cpuStart);
  await options.onWindowEnd?.();
  stopped = true;
  // Bounded: each worker ends after its call in flight, which the caller's deadline bounds.
  await Promise.all(workers);

  const sorted = Float64Array.from(latencies).sort();
  return {
    concurrency: options.concurrency,
    durationMs,
    calls: sorted.length,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    callsPerSec: (sorted.length * 1000) / durationMs,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    p999Ms: percentile(sorted, 0.999),
    maxMs: sorted.length > 0 ? (sorted[sorted.length - 1] ?? 0) : 0,
    cpuPercent: cpuPercent(cpu, durationMs),
  };
}

export interface OpenLoopOptions {
  /** Calls started per second, on a fixed schedule, whatever the answers' pace. */
  ratePerSec: number;
  durationMs: number;
  warmupMs?: number;
  /**
   * Called as the window starts. It runs beside the schedule: calls due while it runs
   * start on time (a CPU snapshot must not hold back the calls it is measuring). It is
   * awaited before `onWindowEnd`.
   */
  onWindowStart?: () => unknown;
  onWindowEnd?: () => unknown;
}

export interface OpenLoopMeasurement extends Measurement {
  ratePerSec: number;
  /** The most calls that were in flight at once over the window. */
  maxInFlight: number;
}

/**
 * Starts calls on a fixed schedule, as independent clients would, and reports latency
 * from each call's scheduled start, so a slow answer also counts against the calls that
 * the schedule started behind it (no coordinated omission). Calls scheduled inside the
 * window are recorded; all of them are awaited before it returns.
 */
export async function measureOpenLoop(
  call: ClosedLoop,
  options: OpenLoopOptions,
): Promise<OpenLoopMeasurement> {
  if (!(options.ratePerSec > 0) || !(options.durationMs > 0)) {
    throw new Error("measureOpenLoop needs ratePerSec > 0 and durationMs > 0");
  }
  const intervalMs = 1000 / options.ratePerSec;
  const warmupMs = options.warmupMs ?? 0;
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let inFlight = 0;
  let maxInFlight = 0;
  /** The window's start hook, once started: it runs beside the schedule, which never waits for it. */
  let windowStarting: Promise<unknown> | undefined;

  const fire = (scheduled: number, recorded: boolean) => {
    inFlight++;
    if (recorded) maxInFlight = Math.max(maxInFlight, inFlight);
    const done = call().then(
      () => {
        if (recorded) latencies.push(performance.now() - scheduled);
      },
      (err: unknown) => {
        if (recorded) {
          errors++;
          firstError ??= err instanceof Error ? err.message : String(err);
        }
      },
    );
    pending.push(done.finally(() => inFlight--));
  };

  const start = performance.now();
  const windowStart = start + warmupMs;
  const end = windowStart + options.durationMs;
  let cpuStart = process.cpuUsage();
  for (let i = 0; ; i++) {
    const scheduled = start + i * intervalMs;
    if (scheduled >= end) break;
    if (windowStarting === undefined && scheduled >= windowStart) {
      windowStarting = Promise.resolve(options.onWindowStart?.());
      windowStarting.catch(() => {}); // rethrown where it is awaited, after the schedule
      cpuStart = process.cpuUsage();
    }
    const wait = scheduled - performance.now();
    if (wait > 0) await sleep(wait);
    fire(scheduled, scheduled >= windowStart);
  }
  const cpu = process.cpuUsage(cpuStart);
  await windowStarting;
  await options.onWindowEnd?.();
  await Promise.all(pending);

  const sorted = Float64Array.from(latencies).sort();
  return {
    concurrency: maxInFlight,
    ratePerSec: options.ratePerSec,
    maxInFlight,
    durationMs: options.durationMs,
    calls: sorted.length,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    callsPerSec: (sorted.length * 1000) / options.durationMs,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    p999Ms: percentile(sorted, 0.999),
    maxMs: sorted.length > 0 ? (sorted[sorted.length - 1] ?? 0) : 0,
    cpuPercent: cpuPercent(cpu, options.durationMs),
  };
}

/** Nearest-rank percentile of ascending values; 0 when there are none. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? 0;
}

/** CPU time (user + system) over a wall-clock span, in percent of one core. */
export function cpuPercent(usage: NodeJS.CpuUsage, wallMs: number): number {
  return wallMs > 0 ? ((usage.user + usage.system) / 1000 / wallMs) * 100 : 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
