/**
 * The stack runner's own metrics: what the supervisor sees of the processes it runs.
 * `./gw up` serves them on `STACK_METRICS_PORT`; in Kubernetes the same figure is the
 * pod's restart count (kube-state-metrics' `kube_pod_container_status_restarts_total`).
 */
import { createServer, type Server } from "node:http";
import { Counter, Registry } from "prom-client";

/** The registry of the runner process (no service registers here). */
export const stackMetricsRegistry = new Registry();

/** Builds the restart counter on a registry (a test's own, or the runner's). */
export function restartCounter(registry: Registry): Counter<"service" | "instance"> {
  const existing = registry.getSingleMetric("stack_process_restarts_total");
  if (existing) return existing as Counter<"service" | "instance">;
  return new Counter({
    name: "stack_process_restarts_total",
    help: "Processes the supervisor restarted after they exited without being asked to, by service and instance.",
    labelNames: ["service", "instance"],
    registers: [registry],
  });
}

/** Serves `GET /metrics` of the runner in the Prometheus text format. */
export function startStackMetricsServer(port: number, host = "127.0.0.1"): Promise<Server> {
  const server = createServer(async (req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": stackMetricsRegistry.contentType });
    res.end(await stackMetricsRegistry.metrics());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
