/**
 * The tracer of a process and its identity on the internal hop, set up once at start.
 * See docs/operations.md, "Observability".
 */
import {
  parseServiceTokenKeys,
  type ServiceIdentity,
  type ServiceKeySet,
  setServiceIdentity,
  setSpansMayRecord,
} from "@gw/rpc";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";

export interface TelemetryOptions {
  /** The `service.name` of the spans. */
  serviceName: string;
  /** OTLP/HTTP collector base URL; spans go to `<endpoint>/v1/traces`. */
  otlpEndpoint?: string | undefined;
  /** Span processors to use instead (tests: a SimpleSpanProcessor over an in-memory exporter). */
  spanProcessors?: SpanProcessor[];
}

export interface Telemetry {
  /** Whether spans are recorded and exported; without an exporter only ids flow. */
  recording: boolean;
  /** Exports what is buffered and stops the provider. */
  shutdown(): Promise<void>;
}

let current: Telemetry | undefined;

/**
 * Registers the process's tracer provider (once: later calls return the first), with
 * W3C trace context propagation and async context tracking. With an exporter, every
 * trace is recorded (ParentBased(AlwaysOn)) and batched to it. Without one, spans are
 * never recorded but still get ids (ParentBased(AlwaysOff)), so `traceparent` flows
 * across the hops and every log line still names its trace.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  if (current !== undefined) return current;
  const processors: SpanProcessor[] = options.spanProcessors ?? [];
  if (options.spanProcessors === undefined && options.otlpEndpoint !== undefined) {
    const url = `${options.otlpEndpoint.replace(/\/+$/, "")}/v1/traces`;
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) }));
  }
  const recording = processors.length > 0;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName }),
    sampler: new ParentBasedSampler({ root: recording ? new AlwaysOnSampler() : new AlwaysOffSampler() }),
    spanProcessors: processors,
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  // Without a processor no span reaches anyone: the hop's interceptors then make their
  // non-recording spans themselves (same ids and traceparent, less work per call).
  setSpansMayRecord(recording);
  current = {
    recording,
    shutdown: () => provider.shutdown(),
  };
  return current;
}

/** Settings the process helpers read (both are in `@gw/config`'s `platformConfig`). */
export interface PlatformSettings {
  SERVICE_TOKEN_KEYS?: string | undefined;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
}

/** Parses `SERVICE_TOKEN_KEYS`; a bad value stops the process naming the variable, never the value. */
export function serviceKeys(settings: PlatformSettings): ServiceKeySet | undefined {
  if (settings.SERVICE_TOKEN_KEYS === undefined) return undefined;
  try {
    return parseServiceTokenKeys(settings.SERVICE_TOKEN_KEYS);
  } catch (err) {
    console.error(`config: SERVICE_TOKEN_KEYS: ${err instanceof Error ? err.message : "invalid"}`);
    process.exit(78);
  }
}

/** The identity a service calls with, if internal access is configured. */
export function serviceIdentity(name: string, settings: PlatformSettings): ServiceIdentity | undefined {
  const keys = serviceKeys(settings);
  return keys === undefined ? undefined : { name, keys };
}

/**
 * For the HTTP services (edge, checkout, sandbox), in `main.ts`: starts the tracer and
 * sets the identity their gRPC clients call with. Returns the config, so it wraps
 * `readConfig()` in one line. (gRPC services get both from `startGrpcService`.)
 */
export function withTelemetry<C extends PlatformSettings>(name: string, config: C): C {
  startTelemetry({ serviceName: name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  setServiceIdentity(serviceIdentity(name, config));
  return config;
}
