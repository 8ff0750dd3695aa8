import { createServer, type Server } from "node:http";
import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

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
export const rpcMetricsInterceptor: Interceptor = timedBy(rpcDuration);

const rpcClientDuration = new Histogram({
  name: "rpc_client_duration_seconds",
  help: "Duration of RPCs this process made, by method and result code.",
  labelNames: ["method", "code"],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  registers: [metricsRegistry],
});

/** Records rate, errors and duration of every RPC a client of ours makes. */
export const rpcClientMetricsInterceptor: Interceptor = timedBy(rpcClientDuration);

/**
 * Client connections that lived to the gRPC server's maximum connection age (grpc-js's
 * server ends them with GOAWAY; its listener counts those that closed past 90 % of it).
 */
export const sessionsAged = new Counter({
  name: "rpc_server_sessions_aged_total",
  help: "Client connections of the gRPC server that closed at their maximum connection age.",
  registers: [metricsRegistry],
});

/** The children of a histogram for one method, one per result code, made on first use. */
interface MethodSeries {
  ok: Observer;
  byCode: Map<Code, Observer>;
  method: string;
}
type Observer = { observe(seconds: number): void };

/**
 * An interceptor that observes each call's duration under `method` and `code`. The
 * labelled children are made once per method and code and kept (both sets are small and
 * fixed), so a call costs one lookup and one observation instead of prom-client's
 * label merging, validation and hashing on every call.
 */
export function timedBy(histogram: Histogram<"method" | "code">): Interceptor {
  const series = new WeakMap<object, MethodSeries>();
  const seriesOf = (req: { service: { typeName: string }; method: { name: string } }) => {
    let s = series.get(req.method);
    if (s === undefined) {
      const method = `${req.service.typeName}/${req.method.name}`;
      s = { ok: histogram.labels({ method, code: "ok" }), byCode: new Map(), method };
      series.set(req.method, s);
    }
    return s;
  };
  const failed = (s: MethodSeries, err: unknown): Observer => {
    const code = ConnectError.from(err).code;
    let o = s.byCode.get(code);
    if (o === undefined) {
      o = histogram.labels({ method: s.method, code: Code[code] ?? "unknown" });
      s.byCode.set(code, o);
    }
    return o;
  };
  return (next) => async (req) => {
    const s = seriesOf(req);
    const started = performance.now();
    try {
      const res = await next(req);
      s.ok.observe((performance.now() - started) / 1000);
      return res;
    } catch (err) {
      failed(s, err).observe((performance.now() - started) / 1000);
      throw err;
    }
  };
}

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
