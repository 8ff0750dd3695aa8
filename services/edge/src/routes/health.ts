import { type Context, Hono } from "hono";
import type { Probe } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";
import { ApiError, errorResponse } from "../errors.ts";

/** How long one probe may take; a dependency slower than this counts as down. */
export const PROBE_TIMEOUT_MS = 1_000;

async function passes(probe: Probe): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([probe().catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs probes in parallel and returns the names of those that failed. */
async function failing(probes: Record<string, Probe>): Promise<string[]> {
  const names = Object.keys(probes);
  const results = await Promise.all(names.map((name) => passes(probes[name]!)));
  return names.filter((_, i) => !results[i]);
}

/**
 * The three probes, without a key:
 * - `/livez`: the process runs and serves HTTP (Kubernetes restarts it otherwise).
 * - `/healthz`: the edge's own dependencies, Postgres and NATS, answer.
 * - `/readyz`: those and every downstream gRPC service answer grpc.health.v1 Check, so a
 *   replica takes traffic only when it can serve it end to end.
 * 204 when healthy; 503 in the one error body, naming what failed.
 */
export function healthRoutes(probes: { self: Record<string, Probe>; downstream: Record<string, Probe> }) {
  const answer = async (c: Context<EdgeEnv>, set: Record<string, Probe>) => {
    const down = await failing(set);
    if (down.length === 0) return c.body(null, 204);
    return errorResponse(c, new ApiError(503, "unhealthy", `unavailable: ${down.join(", ")}`));
  };
  return new Hono<EdgeEnv>()
    .get("/livez", (c) => c.body(null, 204))
    .get("/healthz", (c) => answer(c, probes.self))
    .get("/readyz", (c) => answer(c, { ...probes.self, ...probes.downstream }));
}
