export { SpanKind } from "@opentelemetry/api";
export { type AccessPolicy, GATEWAY_ACCESS_POLICY, isAllowed, SERVICE_NAMES } from "./access-policy.ts";
export { createServiceClient, type ServiceClientOptions } from "./client.ts";
export { Code, ConnectError, errorInfo, failure, type PublicErrorCode } from "./errors.ts";
export { type HealthChecker, healthService } from "./health.ts";
export {
  type InternalAuthOptions,
  internalAuthInterceptor,
  runAsService,
  type ServiceIdentity,
  serviceTokenInterceptor,
  setServiceIdentity,
} from "./internal-auth.ts";
export {
  metricsRegistry,
  rpcClientMetricsInterceptor,
  rpcMetricsInterceptor,
  startMetricsServer,
} from "./metrics.ts";
export {
  type GrpcServer,
  type GrpcServerOptions,
  MAX_CONNECTION_AGE_MS,
  startGrpcServer,
} from "./server.ts";
export {
  parseServiceTokenKeys,
  type ServiceKeySet,
  type ServiceTokenClaims,
  signServiceToken,
  verifyServiceToken,
} from "./service-token.ts";
export {
  gatewayTracer,
  headersGetter,
  headersSetter,
  inSpan,
  REQUEST_ID_HEADER,
  recordGetter,
  recordSetter,
  setSpansMayRecord,
  traceHeaders,
  tracingClientInterceptor,
  tracingServerInterceptor,
} from "./tracing.ts";
