/**
 * One autocannon run against the edge of a test stack, shared by the load suite
 * (main.ts) and the closed loop (closed-loop.ts).
 */
import autocannon from "autocannon";
import type { TestStack } from "../src/stack.ts";

/** A merchant endpoint to load. */
export interface Endpoint {
  name: string;
  method: "GET" | "POST";
  path: string;
  /** A fresh body per request (a new merchant_operation_id for creates). */
  body?: () => string;
}

/** What one run measured. */
export interface Run {
  endpoint: string;
  mode: string;
  ok: number;
  okPerSec: number;
  p50: number;
  p99: number;
  codes: Record<string, number>;
  errors: number;
  timeouts: number;
  missingRetryAfter: number;
}

/** Runs autocannon on one endpoint for a while, closed loop or at a fixed rate. */
export function fire(
  stack: TestStack,
  apiKey: string,
  ep: Endpoint,
  opts: { mode: string; durationMs: number; connections: number; rate?: number },
): Promise<Run> {
  let missingRetryAfter = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: stack.urls.edge,
        connections: opts.connections,
        duration: Math.max(1, Math.round(opts.durationMs / 1000)),
        timeout: 10,
        ...(opts.rate ? { overallRate: Math.max(1, Math.round(opts.rate)) } : {}),
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        requests: [
          {
            method: ep.method,
            path: ep.path,
            setupRequest: (req: Record<string, unknown>) => (ep.body ? { ...req, body: ep.body() } : req),
            onResponse: (status: number, _body: string, _ctx: unknown, headers: unknown) => {
              if ((status === 429 || status === 503) && !hasHeader(headers, "retry-after"))
                missingRetryAfter++;
            },
          },
        ],
      },
      (err: Error | null, r: AutocannonResult) => {
        if (err) return reject(err);
        const codes: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) codes[code] = Number(count);
        const ok = codes["200"] ?? 0;
        resolve({
          endpoint: ep.name,
          mode: opts.mode,
          ok,
          okPerSec: ok / (r.duration || opts.durationMs / 1000),
          p50: r.latency.p50,
          p99: r.latency.p99,
          codes,
          errors: r.errors,
          timeouts: r.timeouts,
          missingRetryAfter,
        });
      },
    );
  });
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number | string }>;
}

/** autocannon hands headers as an object or as a flat [name, value, ...] list by version. */
function hasHeader(headers: unknown, name: string): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) return true;
    return false;
  }
  if (headers && typeof headers === "object")
    return Object.keys(headers).some((k) => k.toLowerCase() === name);
  return false;
}
