import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { restartCounter, stackMetricsRegistry, startStackMetricsServer } from "./metrics.ts";

describe("the stack runner's metrics", () => {
  it("serves the restart counter at /metrics in the Prometheus text format", async () => {
    restartCounter(stackMetricsRegistry).inc({ service: "edge", instance: "edge#2" });
    const server = await startStackMetricsServer(0);
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(
        /^stack_process_restarts_total\{service="edge",instance="edge#2"\} 1$/m,
      );
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
