/**
 * Traces across the internal hop. Nothing instruments connect or @grpc/grpc-js here, so
 * these interceptors do it: the client opens a CLIENT span per call and sends its
 * `traceparent` in the gRPC metadata; the server continues that trace with a SERVER span
 * and runs the handler inside it, with the log context (request id, shop, operation) the
 * call names. Without a tracer provider (telemetry not started) the spans are the API's
 * no-op ones and an incoming `traceparent` is still passed on.
 */
import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { currentLogContext, type LogContext, withLogContext } from "@gw/log";
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";

/** The gRPC metadata key (and HTTP header) that carries the edge's request id downstream. */
export const REQUEST_ID_HEADER = "x-request-id";

const TRACER = "@gw/rpc";

/** Reads W3C trace headers from WHATWG Headers (gRPC metadata, fetch requests). */
export const headersGetter: TextMapGetter<Headers> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key) ?? undefined,
};

/** Writes W3C trace headers into WHATWG Headers. */
export const headersSetter: TextMapSetter<Headers> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

/** Reads trace headers from a plain record (outbox rows, NATS header copies). */
export const recordGetter: TextMapGetter<Record<string, string | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** Writes trace headers into a plain record. */
export const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** The trace context of the current async work as headers (`traceparent`, `tracestate`). */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const out: Record<string, string> = {};
  propagation.inject(ctx, out, recordSetter);
  return out;
}

let tracerOf: { provider: TracerProvider; tracer: Tracer } | undefined;

/** The tracer of our own instrumentation; the global provider decides what it records. */
export function gatewayTracer(): Tracer {
  // Asked once per provider, not per call (the API's lookup builds a cache key each time).
  const provider = trace.getTracerProvider();
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer(TRACER) };
  return tracerOf.tracer;
}

/**
 * Runs `fn` in a new span that is a child of `parent` (the extracted remote context, or
 * the active one), ending it when `fn` settles and marking it failed if it throws. The
 * log context gets `fields` for the duration.
 */
export async function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes?: Attributes; parent?: Context; fields?: LogContext },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = gatewayTracer().startSpan(
    name,
    { kind: options.kind, ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
  );
  const run = () => context.with(trace.setSpan(parent, span), () => fn(span));
  try {
    return await (options.fields === undefined ? run() : withLogContext(options.fields, run));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/** A method's span name and attributes, made once per method. */
interface MethodNames {
  name: string;
  attributes: Attributes;
}
const methodNames = new WeakMap<object, MethodNames>();

function namesOf(req: { service: { typeName: string }; method: { name: string } }): MethodNames {
  let names = methodNames.get(req.method);
  if (names === undefined) {
    names = {
      name: `${req.service.typeName}/${req.method.name}`,
      attributes: Object.freeze({
        "rpc.system": "grpc",
        "rpc.service": req.service.typeName,
        "rpc.method": req.method.name,
      }),
    };
    methodNames.set(req.method, names);
  }
  return names;
}

/**
 * Starts a span of the hop. Its attributes are set only on a span that records: the SDK
 * would otherwise copy and check them on every call just to drop them (our samplers,
 * ParentBased over AlwaysOn or AlwaysOff, do not look at attributes).
 */
function startRpcSpan(names: MethodNames, options: SpanOptions, parent: Context): Span {
  if (!spansMayRecord) return nonRecordingChild(parent);
  const span = gatewayTracer().startSpan(names.name, options, parent);
  if (span.isRecording()) span.setAttributes(names.attributes);
  return span;
}

let spansMayRecord = true;

/**
 * Tells the hop's interceptors whether the process's tracer provider can record spans
 * at all. `startTelemetry` says false when no exporter or span processor is configured:
 * a span would then reach nobody, and the interceptors make the span the SDK would have
 * made themselves, a non-recording child with its own span id in the parent's trace
 * (or a new trace), carrying the parent's sampled flag and trace state. What goes out
 * in `traceparent` and what log lines name is the same; the SDK's sampler, id
 * generator, span metrics and attribute checks are skipped. Default: true.
 */
export function setSpansMayRecord(mayRecord: boolean): void {
  spansMayRecord = mayRecord;
}

/** As the SDK under ParentBased sampling makes a child span that does not record. */
function nonRecordingChild(parent: Context): Span {
  const sc = trace.getSpanContext(parent);
  if (sc !== undefined && trace.isSpanContextValid(sc)) {
    return trace.wrapSpanContext({
      traceId: sc.traceId,
      spanId: randomHexId(8),
      traceFlags: sc.traceFlags & TraceFlags.SAMPLED,
      ...(sc.traceState === undefined ? {} : { traceState: sc.traceState }),
    });
  }
  return trace.wrapSpanContext({
    traceId: randomHexId(16),
    spanId: randomHexId(8),
    traceFlags: TraceFlags.NONE,
  });
}

const idBytes = Buffer.allocUnsafe(16);
/** A random id of `bytes` bytes in lower-case hex, never all zeros (as the SDK's generator). */
function randomHexId(bytes: 8 | 16): string {
  for (let i = 0; i < bytes; i += 4) idBytes.writeUInt32BE((Math.random() * 2 ** 32) >>> 0, i);
  if (idBytes.subarray(0, bytes).every((b) => b === 0)) idBytes[bytes - 1] = 1;
  return idBytes.toString("hex", 0, bytes);
}
const SERVER_SPAN: SpanOptions = Object.freeze({ kind: SpanKind.SERVER });
const CLIENT_SPAN: SpanOptions = Object.freeze({ kind: SpanKind.CLIENT });

function markCode(span: Span, err: unknown): void {
  const code = ConnectError.from(err).code;
  span.setAttribute("rpc.grpc.status_code", code);
  // As the OpenTelemetry conventions say: a server marks only faults as errors.
  if (code === Code.Internal || code === Code.Unknown || code === Code.DataLoss || code === Code.Unavailable)
    span.setStatus({ code: SpanStatusCode.ERROR, message: Code[code] ?? "error" });
}

/** The log fields a request message names: its shop and its operation, where it has them. */
function fieldsOf(message: unknown, requestId: string | null): LogContext {
  const out: LogContext = {};
  if (requestId) out.request_id = requestId;
  if (typeof message !== "object" || message === null) return out;
  const m = message as {
    shopId?: unknown;
    scope?: { shopId?: unknown };
    operationId?: unknown;
    id?: { case?: unknown; value?: unknown };
  };
  const shop = typeof m.shopId === "string" ? m.shopId : m.scope?.shopId;
  if (typeof shop === "string" && shop !== "") out.shop_id = shop;
  const op =
    typeof m.operationId === "string" ? m.operationId : m.id?.case === "operationId" ? m.id.value : "";
  if (typeof op === "string" && op !== "") out.operation_id = op;
  return out;
}

/**
 * Server side: continues the caller's trace (the `traceparent` of the metadata) with a
 * SERVER span named `<package.Service>/<Method>`, and runs the handler inside it with the
 * request id, shop and operation in the log context.
 */
export const tracingServerInterceptor: Interceptor = (next) => async (req) => {
  const header = req.header;
  const parent = propagation.extract(ROOT_CONTEXT, header, headersGetter);
  const span = startRpcSpan(namesOf(req), SERVER_SPAN, parent);
  const fields = fieldsOf(req.stream ? undefined : req.message, header.get(REQUEST_ID_HEADER));
  try {
    return await context.with(trace.setSpan(parent, span), () => withLogContext(fields, () => next(req)));
  } catch (err) {
    markCode(span, err);
    throw err;
  } finally {
    span.end();
  }
};

/**
 * Client side: a CLIENT span per call, child of the active span, whose `traceparent`
 * goes out in the metadata; the request id of the log context goes along.
 */
export const tracingClientInterceptor: Interceptor = (next) => async (req) => {
  const active = context.active();
  const span = startRpcSpan(namesOf(req), CLIENT_SPAN, active);
  propagation.inject(trace.setSpan(active, span), req.header, headersSetter);
  const requestId = currentLogContext().request_id;
  if (requestId !== undefined && !req.header.has(REQUEST_ID_HEADER))
    req.header.set(REQUEST_ID_HEADER, requestId);
  try {
    return await next(req);
  } catch (err) {
    markCode(span, err);
    throw err;
  } finally {
    span.end();
  }
};
