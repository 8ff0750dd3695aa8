import type { DeadLetter } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, DEAD_LETTER_HOLDERS, type DeadLetterHolder, type EdgeClients } from "../deps.ts";
import { errorResponses, jsonRequest, jsonResponse, openApiApp } from "../schemas.ts";
import { freeText } from "../validation.ts";

/**
 * Admin: the dead letters of every service with event consumers (operations, ledger,
 * webhooks): events a consumer could not apply after its attempts, recorded and acked so
 * its stream kept flowing. The operator retries one (the service applies it again, once)
 * after fixing the cause, or discards it with a reason.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: dead letters"];

const text = (field: string, max: number) =>
  z
    .string({ error: (i) => (i.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .trim()
    .min(1, { error: `${field} must not be empty` })
    .max(max, { error: `${field} must be at most ${max} characters` })
    .superRefine(freeText(field, max));

const DeadLetterSchema = z
  .object({
    service: z.enum(DEAD_LETTER_HOLDERS).openapi({ description: "The service whose consumer failed." }),
    consumer: z.string().openapi({ description: "The durable consumer.", example: "ledger" }),
    event_id: z.string().openapi({ format: "uuid" }),
    subject: z.string().openapi({ example: "operations.payment.completed" }),
    attempts: z
      .number()
      .int()
      .openapi({ description: "Failed deliveries, the operator's retries included." }),
    error: z.string().openapi({ description: "The last failure." }),
    first_failed_at: z.string().openapi({ format: "date-time" }),
    last_failed_at: z.string().openapi({ format: "date-time" }),
    status: z.enum(["open", "retried", "discarded"]),
    resolved_at: z.string().optional().openapi({ format: "date-time" }),
    resolved_by: z.string().optional(),
    resolution_reason: z.string().optional(),
  })
  .openapi("DeadLetter");

const keyParams = z.object({
  service: z
    .enum(DEAD_LETTER_HOLDERS, { error: `service must be one of ${DEAD_LETTER_HOLDERS.join(", ")}` })
    .openapi({ param: { name: "service", in: "path" } }),
  consumer: text("consumer", 256).openapi({ param: { name: "consumer", in: "path" } }),
  event_id: z.uuid({ error: "event_id must be a UUID" }).openapi({ param: { name: "event_id", in: "path" } }),
});

const routes = {
  list: createRoute({
    method: "get",
    path: "/dead-letters",
    tags,
    security,
    summary: "Events a consumer could not apply, across services, newest failure first",
    description:
      "Every service with consumers is asked; if one cannot answer, the list is `503` rather than " +
      "incomplete. `open` ones wait for an operator; the gauge `dead_letters_open` counts them.",
    request: {
      query: z.object({
        status: z
          .enum(["open", "retried", "discarded"], { error: "status must be open, retried or discarded" })
          .optional(),
      }),
    },
    responses: {
      200: jsonResponse(z.object({ dead_letters: z.array(DeadLetterSchema) }), "The dead letters."),
      ...errorResponses(400, 401, 503),
    },
  }),
  retry: createRoute({
    method: "post",
    path: "/dead-letters/{service}/{consumer}/{event_id}/retry",
    tags,
    security,
    summary: "Apply a dead letter again, once, after fixing what made it fail",
    description:
      "Its service applies the recorded event with the consumer's own handler and marks it " +
      "`retried`. If it fails again: `412 dead_letter_retry_failed` with the error, and it stays " +
      "`open`. Already retried or discarded: `412 dead_letter_resolved`.",
    request: {
      params: keyParams,
      body: jsonRequest(z.object({ operator: text("operator", 256) }).openapi("DeadLetterRetry")),
    },
    responses: {
      200: jsonResponse(z.object({ dead_letter: DeadLetterSchema }), "The retried dead letter."),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  }),
  discard: createRoute({
    method: "post",
    path: "/dead-letters/{service}/{consumer}/{event_id}/discard",
    tags,
    security,
    summary: "Leave a dead letter unapplied, with a reason",
    request: {
      params: keyParams,
      body: jsonRequest(
        z
          .object({ operator: text("operator", 256), reason: text("reason", 2048) })
          .openapi("DeadLetterDiscard"),
      ),
    },
    responses: {
      200: jsonResponse(z.object({ dead_letter: DeadLetterSchema }), "The discarded dead letter."),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  }),
};

/** The JSON of one dead letter. */
function deadLetterJson(d: DeadLetter, service: DeadLetterHolder): z.infer<typeof DeadLetterSchema> {
  return {
    service,
    consumer: d.consumer,
    event_id: d.eventId,
    subject: d.subject,
    attempts: d.attempts,
    error: d.error,
    first_failed_at: d.firstFailedAt,
    last_failed_at: d.lastFailedAt,
    status: d.status as "open" | "retried" | "discarded",
    ...(d.resolvedAt === undefined ? {} : { resolved_at: d.resolvedAt }),
    ...(d.resolvedBy === undefined ? {} : { resolved_by: d.resolvedBy }),
    ...(d.resolutionReason === undefined ? {} : { resolution_reason: d.resolutionReason }),
  };
}

export function adminDeadLetterRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS };
  return openApiApp()
    .openapi(routes.list, async (c) => {
      const status = c.req.valid("query").status ?? "";
      const lists = await Promise.all(
        DEAD_LETTER_HOLDERS.map(async (service) => {
          const res = await clients.deadLetters[service].listDeadLetters({ status }, opts);
          return res.deadLetters.map((d) => deadLetterJson(d, service));
        }),
      );
      const all = lists.flat().sort((a, b) => (a.last_failed_at < b.last_failed_at ? 1 : -1));
      return c.json({ dead_letters: all }, 200);
    })
    .openapi(routes.retry, async (c) => {
      const p = c.req.valid("param");
      const res = await clients.deadLetters[p.service].retryDeadLetter(
        { consumer: p.consumer, eventId: p.event_id, operator: c.req.valid("json").operator },
        // A retry runs the consumer's handler, which may call other services.
        { timeoutMs: CALL_TIMEOUT_MS * 3 },
      );
      return c.json({ dead_letter: deadLetterJson(res.deadLetter!, p.service) }, 200);
    })
    .openapi(routes.discard, async (c) => {
      const p = c.req.valid("param");
      const body = c.req.valid("json");
      const res = await clients.deadLetters[p.service].discardDeadLetter(
        { consumer: p.consumer, eventId: p.event_id, operator: body.operator, reason: body.reason },
        opts,
      );
      return c.json({ dead_letter: deadLetterJson(res.deadLetter!, p.service) }, 200);
    });
}
