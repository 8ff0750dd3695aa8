import { AsyncLocalStorage } from "node:async_hooks";
import { context, trace } from "@opentelemetry/api";
import { type Logger, pino } from "pino";

export type { Logger };

/**
 * Paths that may carry secrets. pino replaces them with "[redacted]" wherever a log
 * call passes them, so API keys, link credentials, webhook secrets and signed URLs never
 * reach a log line.
 */
const REDACT = [
  "apiKey",
  "api_key",
  "secret",
  "credentials",
  "token",
  "authorization",
  "password",
  "receipt_url",
  "payment_url",
  "*.apiKey",
  "*.api_key",
  "*.secret",
  "*.credentials",
  "*.token",
  "*.authorization",
  "*.receipt_url",
  "*.payment_url",
  'headers["x-api-key"]',
  "headers.authorization",
  'req.headers["x-api-key"]',
  "req.headers.authorization",
];

/**
 * What a log line says about the work it belongs to, beyond the trace: the edge's
 * request id, the shop and the operation, as far as they are known. Keys are the log
 * field names.
 */
export interface LogContext {
  request_id?: string;
  shop_id?: string;
  operation_id?: string;
  event_id?: string;
}

const fields = new AsyncLocalStorage<LogContext>();

/**
 * Runs `fn` with `extra` added to the log context of every line logged inside it (and
 * inside the async work it starts). The outer context is copied, never changed, so
 * concurrent requests never see each other's fields.
 */
export function withLogContext<T>(extra: LogContext, fn: () => T): T {
  const outer = fields.getStore();
  return fields.run(outer === undefined ? { ...extra } : { ...outer, ...extra }, fn);
}

/**
 * Adds fields to the current log context, for facts learnt partway through (the shop
 * of an API key, the operation id a create derived). Without a surrounding
 * `withLogContext` it does nothing.
 */
export function addLogContext(extra: LogContext): void {
  const store = fields.getStore();
  if (store !== undefined) Object.assign(store, extra);
}

/** The log context of the current async work, or an empty one. */
export function currentLogContext(): Readonly<LogContext> {
  return fields.getStore() ?? {};
}

/**
 * Adds the active trace and span ids and the log context to every line. A field the
 * call itself passes, or the logger's child bindings already hold, is not repeated.
 */
function mixin(mergeObject: object, _level: number, logger: Logger): Record<string, string> {
  const out: Record<string, string> = {};
  const span = trace.getSpan(context.active())?.spanContext();
  if (span !== undefined && span.traceId !== "00000000000000000000000000000000") {
    out.trace_id = span.traceId;
    out.span_id = span.spanId;
  }
  const store = fields.getStore();
  if (store !== undefined) {
    const bound = (Reflect.get(logger, pino.symbols.chindingsSym) as string | undefined) ?? "";
    for (const key in store) {
      const value = store[key as keyof LogContext];
      if (value === undefined || value === "" || key in mergeObject) continue;
      if (bound.includes(`"${key}":`)) continue;
      out[key] = value;
    }
  }
  return out;
}

/**
 * Creates the JSON logger of one service process. Every line carries `trace_id` and
 * `span_id` of the active span (when tracing is set up) and the fields of the log
 * context (`withLogContext`).
 */
export function createLogger(service: string, level = "info"): Logger {
  return pino({
    level,
    base: { service },
    redact: { paths: REDACT, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin,
  });
}
