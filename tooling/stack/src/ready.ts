import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { createServiceClient } from "@gw/rpc";
import type { Readiness } from "./services.ts";

/**
 * One readiness question: gRPC services answer grpc.health.v1 `Check` for the whole
 * process; HTTP services answer `GET /readyz` with 204 (the spec's probe contract).
 */
export function readinessCheck(readiness: Readiness, url: string): () => Promise<boolean> {
  if (readiness === "http") {
    return async () => {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      return res.status === 204;
    };
  }
  const client = createServiceClient(Health, url, { defaultTimeoutMs: 2_000 });
  return async () =>
    (await client.check({ service: "" })).status === HealthCheckResponse_ServingStatus.SERVING;
}
