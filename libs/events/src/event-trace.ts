import { type LogContext, withLogContext } from "@gw/log";
import { gatewayTracer } from "@gw/rpc";
import type { JsMsg } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import { REQUEST_ID_EVENT_HEADER } from "./outbox.ts";

/** Reads W3C trace headers from NATS message headers. */
const natsHeadersGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (carrier) => (carrier === undefined ? [] : carrier.keys()),
  get: (carrier, key) => (carrier?.has(key) ? carrier.get(key) : undefined),
};

/**
 * A consumed event's CONSUMER span, which continues the trace of the change that wrote
 * the event (the `traceparent` the outbox stored), and the log fields of its handling
 * (the event id, the request id that caused it, and what `logFields` adds). It stays
 * open from the event's decoding to its ack or its failure, across the batch it is in.
 */
export interface EventTrace {
  readonly span: Span;
  readonly context: Context;
  readonly fields: LogContext;
}

/** Opens the span of a message a consumer took. */
export function openEventTrace(m: JsMsg, eventId: string, consumer: string, prefix: string): EventTrace {
  const parent = propagation.extract(ROOT_CONTEXT, m.headers, natsHeadersGetter);
  const span = gatewayTracer().startSpan(
    `${m.subject.slice(prefix.length + 1)} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "nats",
        "messaging.destination.name": m.subject,
        "messaging.consumer.group.name": consumer,
        "messaging.message.id": eventId,
      },
    },
    parent,
  );
  const requestId = m.headers?.has(REQUEST_ID_EVENT_HEADER) ? m.headers.get(REQUEST_ID_EVENT_HEADER) : "";
  return {
    span,
    context: trace.setSpan(parent, span),
    fields: { event_id: eventId, ...(requestId ? { request_id: requestId } : {}) },
  };
}

/** Runs `fn` inside the event's span and log context: its lines name the trace, the event and the request. */
export function withinEvent<R>(t: EventTrace, fn: () => R): R {
  return context.with(t.context, () => withLogContext(t.fields, fn));
}

/** Ends the event's span, as failed when `err` is given. */
export function closeEventTrace(t: EventTrace, err?: unknown): void {
  if (err !== undefined)
    t.span.setStatus({
      code: SpanStatusCode.ERROR,
      message: err instanceof Error ? err.message : String(err),
    });
  t.span.end();
}
