export { Code, ConnectError, errorInfo, failure, type PublicErrorCode } from "./errors.ts";
export { createServiceClient, type ServiceClientOptions } from "./client.ts";
export { startGrpcServer, type GrpcServer, type GrpcServerOptions } from "./server.ts";
export { metricsRegistry, startMetricsServer, rpcMetricsInterceptor } from "./metrics.ts";
export { healthService, type HealthChecker } from "./health.ts";
