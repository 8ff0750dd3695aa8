import { describe, expect, it } from "vitest";
import { measure, measureOpenLoop, percentile } from "./measure.ts";
import { parsePgbench, ratioToPgbench } from "./pgbench.ts";

// Benchmarks are not tests: these check that the harness produces sane numbers, never
// how fast anything is.

describe("measure", () => {
  it("keeps the requested number of calls in flight and counts every call of the window", async () => {
    let inFlight = 0;
    let most = 0;
    const m = await measure(
      async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
      },
      { concurrency: 8, durationMs: 100 },
    );
    expect(most).toBe(8);
    expect(m.calls).toBeGreaterThan(0);
    expect(m.errors).toBe(0);
    expect(m.p99Ms).toBeGreaterThanOrEqual(m.p50Ms);
    expect(m.p999Ms).toBeGreaterThanOrEqual(m.p99Ms);
  });

  it("counts failed calls apart and keeps the first failure's message", async () => {
    let n = 0;
    const m = await measure(
      async () => {
        await new Promise((r) => setImmediate(r));
        if (n++ % 2 === 0) throw new Error("boom");
      },
      { concurrency: 1, durationMs: 50 },
    );
    expect(m.errors).toBeGreaterThan(0);
    expect(m.firstError).toBe("boom");
  });

  it("starts open-loop calls on the schedule and counts a stall against the calls behind it", async () => {
    // 200 calls/s for 250 ms: 50 calls. The first call of the window hangs 100 ms; the
    // schedule does not wait for it, and no other call sees that stall.
    let n = 0;
    const m = await measureOpenLoop(
      async () => {
        await new Promise((r) => setTimeout(r, n++ === 0 ? 100 : 1));
      },
      { ratePerSec: 200, durationMs: 250 },
    );
    expect(m.calls).toBe(50);
    expect(m.errors).toBe(0);
    expect(m.maxInFlight).toBeGreaterThan(1);
    expect(m.maxMs).toBeGreaterThanOrEqual(95); // timers may fire a fraction of a ms early
    expect(m.p50Ms).toBeLessThan(100);
  });

  it("measures open-loop latency from the scheduled start, not from when the call began", async () => {
    // A call that blocks the event loop for 30 ms makes the calls scheduled meanwhile start
    // late; their latency includes that wait.
    let n = 0;
    const m = await measureOpenLoop(
      async () => {
        if (n++ === 0) {
          const until = performance.now() + 30;
          while (performance.now() < until);
        }
      },
      { ratePerSec: 1000, durationMs: 50 },
    );
    // Calls 1 to 29 wait behind the block: measured from their actual start they would
    // take about nothing, and the median would be near 0.
    expect(m.calls).toBe(50);
    expect(m.maxMs).toBeGreaterThanOrEqual(25);
    expect(m.p50Ms).toBeGreaterThanOrEqual(2);
  });

  it("keeps the schedule while the window's start hook runs", async () => {
    // The hook (a CPU snapshot over the network, say) takes 300 ms; the calls due meanwhile
    // start on time, so none of them counts the hook's wait as its latency.
    const m = await measureOpenLoop(async () => {}, {
      ratePerSec: 200,
      durationMs: 400,
      warmupMs: 20,
      onWindowStart: () => new Promise((r) => setTimeout(r, 300)),
    });
    expect(m.calls).toBe(80);
    expect(m.maxMs).toBeLessThan(200);
  });

  it("takes nearest-rank percentiles", () => {
    const values = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 0.5)).toBe(50);
    expect(percentile(values, 0.99)).toBe(99);
    expect(percentile(new Float64Array(0), 0.5)).toBe(0);
  });
});

describe("pgbench", () => {
  it("reads tps and latency from pgbench's summary", () => {
    const out = [
      "number of transactions actually processed: 5573",
      "latency average = 34.440 ms",
      "initial connection time = 120.013 ms",
      "tps = 1858.312345 (without initial connection time)",
    ].join("\n");
    const parsed = parsePgbench(out);
    expect(parsed).toEqual({ tps: 1858.312345, latencyAvgMs: 34.44 });
    expect(
      ratioToPgbench(929.156, { ...parsed, rowsPerTransaction: 3, clients: 64, durationMs: 3000 }),
    ).toBeCloseTo(0.5);
  });

  it("refuses output without a summary", () => {
    expect(() => parsePgbench("connection to server failed")).toThrow(/unexpected pgbench output/);
  });
});
