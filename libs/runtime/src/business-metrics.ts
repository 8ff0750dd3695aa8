/**
 * Business figures that can be read off the RPCs themselves, recorded by an interceptor
 * that every gRPC service runs (so no handler carries metrics code): creates by outcome
 * and receipt verdicts. Completions are counted from the events (`domain_events_total`
 * in `@gw/events`), pool depth by the matching service itself.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { errorInfo, metricsRegistry } from "@gw/rpc";
import { Counter } from "prom-client";

/** Creates answered by operations, by operation type and outcome. */
export const operationCreates = new Counter({
  name: "operations_creates_total",
  help: "CreateOperation answers by type (payment, payout) and outcome: the status a new create reached (pending, awaiting_confirmation, rejected, cancelled), replayed, or the public error code.",
  labelNames: ["type", "outcome"],
  registers: [metricsRegistry],
});

/** Receipt reviews by verdict. */
export const receiptVerdicts = new Counter({
  name: "receipt_verdicts_total",
  help: "Receipts reviewed by verdict (completed, rejected, manual_check); replays of a reviewed file are not counted.",
  labelNames: ["verdict"],
  registers: [metricsRegistry],
});

const CREATE = "gateway.operations.v1.OperationsService/CreateOperation";
/** The methods whose answers carry business figures: method name to service name. */
const COUNTED = new Map([
  ["CreateOperation", "gateway.operations.v1.OperationsService"],
  ["SubmitReceipt", "gateway.receipts.v1.ReceiptsService"],
]);

interface CreateShapes {
  req: { type?: unknown };
  res: { operation?: { type?: unknown; status?: unknown }; replayed?: unknown };
}

/** A label from a merchant's value, bounded to the known types. */
const typeLabel = (type: unknown) => (type === "payment" || type === "payout" ? type : "other");

/** Records the business figures of the RPCs that carry them; every other call passes untouched. */
export const businessMetricsInterceptor: Interceptor = (next) => {
  const counted: typeof next = async (req) => {
    const path = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (res.stream) return res;
      if (path === CREATE) {
        const { operation, replayed } = res.message as CreateShapes["res"];
        operationCreates.inc({
          type: typeLabel(operation?.type),
          outcome: replayed === true ? "replayed" : String(operation?.status ?? "unknown"),
        });
      } else {
        const { review, replayed } = res.message as { review?: { verdict?: unknown }; replayed?: unknown };
        if (replayed !== true) receiptVerdicts.inc({ verdict: String(review?.verdict ?? "unknown") });
      }
      return res;
    } catch (err) {
      if (path === CREATE) {
        const type = typeLabel(req.stream ? undefined : (req.message as CreateShapes["req"]).type);
        const code = errorInfo(err)?.code || (Code[ConnectError.from(err).code] ?? "unknown").toLowerCase();
        operationCreates.inc({ type, outcome: code });
      }
      throw err;
    }
  };
  // Every other call passes straight on, without a promise or a string of its own.
  return (req) => (COUNTED.get(req.method.name) === req.service.typeName ? counted(req) : next(req));
};
