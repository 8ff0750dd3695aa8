import type { Interceptor, ServiceImpl } from "@connectrpc/connect";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import {
  createServiceClient,
  type GrpcServer,
  recordGetter,
  setSpansMayRecord,
  startGrpcServer,
  traceHeaders,
} from "@gw/rpc";
import { context, propagation, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTelemetry } from "./telemetry.ts";

// The process tracer without an exporter (as services run unless OTEL_EXPORTER_OTLP_ENDPOINT
// is set), over a real gRPC server on port 0. Nothing records, but trace ids must still
// flow across the hop: each case runs once with the interceptors' own non-recording spans
// (what startTelemetry chooses here) and once through the SDK's tracer, and both must
// give the same shape of traceparent.

const telemetry = startTelemetry({ serviceName: "test-off" });

let inHandler: { traceparent?: string; tracestate?: string; recording?: boolean } = {};
const matching: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth() {
    inHandler = { ...traceHeaders(), recording: trace.getActiveSpan()?.isRecording() };
    return { payouts: 1n, freeAmount: "0" };
  },
};

let server: GrpcServer;
let sent: string | null = null;
/** Runs inside the client's own interceptors: sees the traceparent that goes out. */
const capture: Interceptor = (next) => (req) => {
  sent = req.header.get("traceparent");
  return next(req);
};

beforeAll(async () => {
  server = await startGrpcServer({
    routes: (router) => router.service(MatchingService, matching),
    serviceNames: [MatchingService.typeName],
    port: 0,
    host: "127.0.0.1",
    check: async () => true,
  });
});

afterAll(async () => {
  setSpansMayRecord(false);
  await server?.close();
  await telemetry.shutdown();
});

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const parts = (traceparent: string | null | undefined) => {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent ?? "");
  expect(m, `traceparent ${traceparent}`).not.toBeNull();
  return { traceId: m?.[1], spanId: m?.[2], flags: m?.[3] };
};

async function callUnder(carrier: Record<string, string> | undefined) {
  const client = createServiceClient(MatchingService, `http://127.0.0.1:${server.port}`, {
    identity: null,
    interceptors: [capture],
  });
  const parent =
    carrier === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier, recordGetter);
  await context.with(parent, () => client.getPoolDepth({}));
  return { sent: parts(sent), handler: parts(inHandler.traceparent), state: inHandler.tracestate };
}

describe.each([
  ["the interceptors' own spans", false],
  ["the SDK's spans", true],
])("without an exporter, with %s", (_name, sdk) => {
  beforeAll(() => {
    expect(telemetry.recording).toBe(false);
    setSpansMayRecord(sdk);
  });

  it("continues the caller's trace with a new span id at each side, not sampled", async () => {
    const { sent, handler } = await callUnder({ traceparent: `00-${TRACE}-${PARENT}-00` });
    expect(sent).toEqual({ traceId: TRACE, spanId: expect.not.stringMatching(PARENT), flags: "00" });
    expect(handler.traceId).toBe(TRACE);
    expect(handler.flags).toBe("00");
    expect(new Set([PARENT, sent.spanId, handler.spanId]).size).toBe(3);
    expect(inHandler.recording).toBe(false);
  });

  it("passes a sampled caller's flag and trace state on", async () => {
    const { sent, handler, state } = await callUnder({
      traceparent: `00-${TRACE}-${PARENT}-01`,
      tracestate: "vendor=abc",
    });
    expect(sent.flags).toBe("01");
    expect(handler.flags).toBe("01");
    expect(handler.traceId).toBe(TRACE);
    expect(state).toBe("vendor=abc");
  });

  it("starts a new trace for a call made outside any trace", async () => {
    const first = await callUnder(undefined);
    const second = await callUnder(undefined);
    expect(first.handler.traceId).toBe(first.sent.traceId);
    expect(first.sent.traceId).not.toBe(second.sent.traceId);
    expect(first.sent.traceId).not.toMatch(/^0+$/);
    expect(first.sent.flags).toBe("00");
  });
});
