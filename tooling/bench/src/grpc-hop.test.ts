import { describe, expect, it } from "vitest";
import { runGrpcHop } from "./grpc-hop.ts";

// Benchmarks are not tests: these check that the gRPC hop (a client and a server process)
// produces sane numbers, never how fast anything is. The harness's own arithmetic is
// checked without processes in bench.unit.test.ts.

describe("grpc-hop", () => {
  it("runs a short hop between two processes and reports sane figures", async () => {
    const [report] = await runGrpcHop({
      variants: ["tuned"],
      levels: [1, 4],
      durationMs: 300,
      warmupMs: 100,
    });
    expect(report?.levels).toHaveLength(2);
    for (const level of report?.levels ?? []) {
      expect(level.errors).toBe(0);
      expect(level.calls).toBeGreaterThan(0);
      expect(level.p99Ms).toBeGreaterThanOrEqual(level.p50Ms);
      expect(level.serverCpuPercent).toBeGreaterThan(0);
    }
  });

  it("serves a stock @grpc/grpc-js client from startGrpcServer", async () => {
    const [report] = await runGrpcHop({ variants: ["grpc-js"], levels: [2], durationMs: 200, warmupMs: 50 });
    expect(report?.levels[0]?.errors).toBe(0);
    expect(report?.levels[0]?.calls).toBeGreaterThan(0);
  });
});
