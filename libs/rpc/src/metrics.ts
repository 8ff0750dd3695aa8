import { createServer, type Server } from "node:http";
import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** The one Prometheus registry of a process; every metric of every lib registers here. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const rpcDuration = new Histogram({
  name: "rpc_server_duration_seconds",
  help: "Duration of served RPCs by method and result code.",
  labelNames: ["method", "code"],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  registers: [metricsRegistry],
});

/** Records rate, errors and duration of every unary and streaming RPC served. */
export const rpcMetricsInterceptor: Interceptor = (next) => async (req) => {
  const end = rpcDuration.startTimer({ method: `${req.service.typeName}/${req.method.name}` });
  try {
    const res = await next(req);
    end({ code: "ok" });
    return res;
  } catch (err) {
    end({ code: Code[ConnectError.from(err).code] ?? "unknown" });
    throw err;
  }
};

const rpcClientDuration = new Histogram({
  name: "rpc_client_duration_seconds",
  help: "Duration of RPCs this process made, by method and result code.",
  labelNames: ["method", "code"],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  registers: [metricsRegistry],
});

/** Records rate, errors and duration of every RPC a client of ours makes. */
export const rpcClientMetricsInterceptor: Interceptor = (next) => async (req) => {
  const end = rpcClientDuration.startTimer({ method: `${req.service.typeName}/${req.method.name}` });
  try {
    const res = await next(req);
    end({ code: "ok" });
    return res;
  } catch (err) {
    end({ code: Code[ConnectError.from(err).code] ?? "unknown" });
    throw err;
  }
};

/** Serves `GET /metrics` in the Prometheus text format on its own port. */
export function startMetricsServer(port: number, host: string): Promise<Server> {
  const server = createServer(async (req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": metricsRegistry.contentType });
    res.end(await metricsRegistry.metrics());
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}
