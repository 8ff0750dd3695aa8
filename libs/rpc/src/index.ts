export { createServiceClient, type ServiceClientOptions } from "./client.ts";
export { Code, ConnectError, errorInfo, failure, type PublicErrorCode } from "./errors.ts";
export { type HealthChecker, healthService } from "./health.ts";
export { metricsRegistry, rpcMetricsInterceptor, startMetricsServer } from "./metrics.ts";
export {
  type GrpcServer,
  type GrpcServerOptions,
  HTTP2_SERVER_OPTIONS,
  startGrpcServer,
  tuneServerSession,
} from "./server.ts";
