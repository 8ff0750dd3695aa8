import type { ServiceImpl } from "@connectrpc/connect";
import { type Health, HealthCheckResponse_ServingStatus as Status } from "@gw/proto/grpc/health/v1/health_pb";

/** Answers whether the process can serve now (its Postgres and NATS are reachable). */
export type HealthChecker = () => Promise<boolean>;

/**
 * The standard grpc.health.v1 service, for Kubernetes `grpc:` probes and stock
 * clients. The empty service name stands for the whole process; each registered
 * service name answers the same, and any other name is SERVICE_UNKNOWN.
 */
export function healthService(
  names: string[],
  check: HealthChecker,
  draining: () => boolean,
): ServiceImpl<typeof Health> {
  const known = new Set(["", ...names]);
  const status = async (service: string) => {
    if (!known.has(service)) return Status.SERVICE_UNKNOWN;
    if (draining()) return Status.NOT_SERVING;
    return (await check().catch(() => false)) ? Status.SERVING : Status.NOT_SERVING;
  };
  return {
    async check(req) {
      return { status: await status(req.service) };
    },
    async list() {
      const statuses: Record<string, { status: Status }> = {};
      for (const name of known) statuses[name] = { status: await status(name) };
      return { statuses };
    },
    async *watch(req, ctx) {
      let last: Status | undefined;
      while (!ctx.signal.aborted) {
        const now = await status(req.service);
        if (now !== last) yield { status: now };
        last = now;
        await new Promise((r) => setTimeout(r, 1000));
      }
    },
  };
}
