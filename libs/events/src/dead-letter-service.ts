import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Sql } from "@gw/db";
import {
  type DeadLetter,
  DeadLetterSchema,
  type DeadLetterService,
  type DiscardDeadLetterRequest,
  type ListDeadLettersRequest,
  type RetryDeadLetterRequest,
} from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { validate as isUuid } from "uuid";
import {
  DeadLetterNotFoundError,
  type DeadLetterRow,
  discardDeadLetter,
  type EventApplier,
  isDeadLetterStatus,
  listDeadLetters,
  retryDeadLetter,
} from "./dead-letters.ts";
import { deadLetterFailure, invalid } from "./errors.ts";

/** The most rows one list answers, and its default. */
const MAX_LIST = 500;
/** A discard reason's limit in bytes, as the cancel reason's. */
const MAX_REASON_BYTES = 2048;

/** RFC 3339 of a timestamp column, which the pool may hand out as a Date or as text. */
const iso = (value: Date | string) => new Date(value).toISOString();

/**
 * The DeadLetterService of one service process: lists its `dead_letters` and lets an
 * operator retry (re-apply through the consumer's own handler) or discard them. Every
 * service with consumers serves it over its own schema, naming the consumers a retry may
 * run.
 */
export class DeadLetterHandlers implements ServiceImpl<typeof DeadLetterService> {
  readonly #service: string;
  readonly #sql: Sql;
  readonly #schema: string;
  // biome-ignore lint/suspicious/noExplicitAny: each consumer decodes its own event type.
  readonly #appliers: Map<string, EventApplier<any>>;

  constructor(options: {
    service: string;
    sql: Sql;
    schema: string;
    // biome-ignore lint/suspicious/noExplicitAny: each consumer decodes its own event type.
    consumers: EventApplier<any>[];
  }) {
    this.#service = options.service;
    this.#sql = options.sql;
    this.#schema = options.schema;
    this.#appliers = new Map(options.consumers.map((c) => [c.durable, c]));
  }

  /** Dead letters, newest failure first. Errors: INVALID_ARGUMENT (an unknown status). */
  async listDeadLetters(req: ListDeadLettersRequest) {
    if (req.status !== "" && !isDeadLetterStatus(req.status)) {
      throw invalid("status", "status must be open, retried or discarded");
    }
    const limit = req.limit > 0 ? Math.min(req.limit, MAX_LIST) : MAX_LIST;
    const rows = await listDeadLetters(this.#sql, this.#schema, {
      ...(req.status === "" ? {} : { status: req.status }),
      limit,
    });
    return { deadLetters: rows.map((row) => this.#toProto(row)) };
  }

  /**
   * Re-applies a dead letter once. Errors: INVALID_ARGUMENT, NOT_FOUND
   * (dead_letter_not_found), FAILED_PRECONDITION (dead_letter_resolved,
   * dead_letter_retry_failed).
   */
  async retryDeadLetter(req: RetryDeadLetterRequest) {
    const { consumer, eventId, operator } = this.#key(req);
    const applier = this.#appliers.get(consumer);
    if (!applier) throw deadLetterFailure(new DeadLetterNotFoundError(consumer, eventId));
    try {
      const row = await retryDeadLetter(this.#sql, this.#schema, applier, eventId, operator);
      return { deadLetter: this.#toProto(row) };
    } catch (err) {
      throw deadLetterFailure(err);
    }
  }

  /** Leaves a dead letter unapplied, with a reason. Errors: INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION. */
  async discardDeadLetter(req: DiscardDeadLetterRequest) {
    const { consumer, eventId, operator } = this.#key(req);
    const reason = req.reason.trim();
    if (reason === "") throw invalid("reason", "reason is required");
    if (Buffer.byteLength(reason) > MAX_REASON_BYTES) {
      throw invalid("reason", `reason is longer than ${MAX_REASON_BYTES} bytes`);
    }
    try {
      const row = await discardDeadLetter(this.#sql, this.#schema, consumer, eventId, operator, reason);
      return { deadLetter: this.#toProto(row) };
    } catch (err) {
      throw deadLetterFailure(err);
    }
  }

  #key(req: { consumer: string; eventId: string; operator: string }) {
    if (req.consumer === "") throw invalid("consumer", "consumer is required");
    if (!isUuid(req.eventId)) throw invalid("event_id", "event_id must be a UUID");
    return { consumer: req.consumer, eventId: req.eventId, operator: req.operator || "operator" };
  }

  #toProto(row: DeadLetterRow): DeadLetter {
    return create(DeadLetterSchema, {
      service: this.#service,
      consumer: row.consumer,
      eventId: row.event_id,
      subject: row.subject,
      attempts: row.attempts,
      error: row.error,
      firstFailedAt: iso(row.first_failed_at),
      lastFailedAt: iso(row.last_failed_at),
      status: row.status,
      ...(row.resolved_at ? { resolvedAt: iso(row.resolved_at) } : {}),
      ...(row.resolved_by ? { resolvedBy: row.resolved_by } : {}),
      ...(row.resolution_reason ? { resolutionReason: row.resolution_reason } : {}),
    });
  }
}
