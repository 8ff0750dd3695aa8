import type { ServiceImpl } from "@connectrpc/connect";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import {
  createServiceClient,
  type GrpcServer,
  inSpan,
  SpanKind,
  startGrpcServer,
  traceHeaders,
} from "@gw/rpc";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTelemetry } from "./telemetry.ts";

// The process tracer with an in-memory exporter, over a real gRPC server on port 0: the
// client's span and the server's span share one trace, and the handler sees the latter.

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({
  serviceName: "test",
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
});
let seenInHandler: { traceparent?: string } = {};

const matching: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth() {
    seenInHandler = traceHeaders();
    return { payouts: 1n, freeAmount: "0" };
  },
};

let server: GrpcServer;

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
  await server?.close();
  await telemetry.shutdown();
});

describe("the process tracer", () => {
  it("records a client span, and a server span that is its child in the same trace", async () => {
    exporter.reset();
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${server.port}`, {
      identity: null,
    });
    await inSpan("root", { kind: SpanKind.INTERNAL }, () => client.getPoolDepth({}));
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === "root");
    const clientSpan = spans.find((s) => s.kind === SpanKind.CLIENT);
    const serverSpan = spans.find((s) => s.kind === SpanKind.SERVER);
    expect(root && clientSpan && serverSpan).toBeTruthy();
    const traceId = root!.spanContext().traceId;
    expect(clientSpan!.spanContext().traceId).toBe(traceId);
    expect(serverSpan!.spanContext().traceId).toBe(traceId);
    expect(clientSpan!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
    expect(serverSpan!.parentSpanContext?.spanId).toBe(clientSpan!.spanContext().spanId);
    expect(serverSpan!.name).toBe(`${MatchingService.typeName}/GetPoolDepth`);
    expect(serverSpan!.attributes["rpc.method"]).toBe("GetPoolDepth");
    // What the handler would store with an outbox row continues the server span.
    expect(seenInHandler.traceparent).toBe(`00-${traceId}-${serverSpan!.spanContext().spanId}-01`);
  });

  it("starts a new trace for a call made outside any span", async () => {
    exporter.reset();
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${server.port}`, {
      identity: null,
    });
    await client.getPoolDepth({});
    await client.getPoolDepth({});
    const clients = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);
    expect(clients).toHaveLength(2);
    expect(clients[0]!.spanContext().traceId).not.toBe(clients[1]!.spanContext().traceId);
    expect(clients[0]!.parentSpanContext).toBeUndefined();
  });

  it("is set up once per process", () => {
    expect(startTelemetry({ serviceName: "other" })).toBe(telemetry);
    expect(telemetry.recording).toBe(true);
  });
});
