import type { Sql } from "./connect.ts";

/**
 * A table's retention: rows `older` than `keepMs` (by `ageColumn`), and matching `where`
 * when given, are deleted by the owning service's `RetentionJob`, a bounded batch at a
 * time. docs/operations.md lists every table that grows with traffic with its rule.
 */
export interface RetentionRule {
  /** `schema.table`, as the owning service names it. */
  table: string;
  /** The timestamp column the age is read from. */
  ageColumn: string;
  keepMs: number;
  /** An extra SQL condition on the row (`t` is the table's alias), e.g. "status = 'delivered'". */
  where?: string;
}

/** Rows one delete statement removes at most: short statements, short row locks. */
export const RETENTION_BATCH = 1_000;
/** Batches one rule deletes per pass at most; the rest follow in the next pass. */
const MAX_BATCHES_PER_PASS = 50;

const IDENTIFIER = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/** The inbox rule every consumer's schema shares: a redelivery is impossible once the stream dropped the message (7 days). */
export const inboxRetention = (schema: string): RetentionRule => ({
  table: `${schema}.inbox`,
  ageColumn: "processed_at",
  keepMs: INBOX_KEEP_MS,
});

/** Resolved dead letters (retried or discarded) stay this long for the operator's history. */
export const resolvedDeadLetterRetention = (schema: string): RetentionRule => ({
  table: `${schema}.dead_letters`,
  ageColumn: "resolved_at",
  keepMs: DEAD_LETTER_KEEP_MS,
  where: "t.status <> 'open'",
});

/** The stream keeps messages 7 days (libs/events, `max_age`); a day more for clock skew and slow consumers. */
export const INBOX_KEEP_MS = 8 * 24 * 3_600_000;
export const DEAD_LETTER_KEEP_MS = 30 * 24 * 3_600_000;

/**
 * Deletes what `rule` no longer keeps, in batches of `RETENTION_BATCH`; returns how many
 * rows went. Idempotent and safe on every replica at once (a row is deleted once).
 */
export async function prune(
  sql: Sql,
  rule: RetentionRule,
  maxBatches = MAX_BATCHES_PER_PASS,
): Promise<number> {
  if (!IDENTIFIER.test(rule.table) || !IDENTIFIER.test(rule.ageColumn))
    throw new Error(`retention rule names an invalid table or column: ${rule.table}.${rule.ageColumn}`);
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const rows = await sql.unsafe(
      `delete from ${rule.table} where ctid in (
         select ctid from ${rule.table} t
         where t.${rule.ageColumn} < now() - make_interval(secs => $1::double precision)
           ${rule.where ? `and (${rule.where})` : ""}
         limit ${RETENTION_BATCH}
         for update skip locked)`,
      [rule.keepMs / 1000],
    );
    deleted += rows.count;
    if (rows.count < RETENTION_BATCH) break;
  }
  return deleted;
}

/**
 * A service's retention job: every `intervalMs`, each rule is pruned (`prune`). A failed
 * pass is logged and retried at the next interval; nothing else waits on it.
 */
export class RetentionJob {
  readonly #sql: Sql;
  readonly #rules: readonly RetentionRule[];
  readonly #intervalMs: number;
  readonly #onError: (rule: RetentionRule, err: unknown) => void;
  readonly #onPruned: (rule: RetentionRule, deleted: number) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(
    sql: Sql,
    rules: readonly RetentionRule[],
    options: {
      intervalMs: number;
      onError: (rule: RetentionRule, err: unknown) => void;
      onPruned?: (rule: RetentionRule, deleted: number) => void;
    },
  ) {
    this.#sql = sql;
    this.#rules = rules;
    this.#intervalMs = options.intervalMs;
    this.#onError = options.onError;
    this.#onPruned = options.onPruned ?? (() => {});
  }

  /** One pass over every rule; returns the rows deleted per table. */
  async runOnce(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const rule of this.#rules) {
      try {
        const deleted = await prune(this.#sql, rule);
        out[rule.table] = (out[rule.table] ?? 0) + deleted;
        if (deleted > 0) this.#onPruned(rule, deleted);
      } catch (err) {
        this.#onError(rule, err);
      }
    }
    return out;
  }

  start(): void {
    if (this.#rules.length === 0 || this.#intervalMs <= 0 || this.#timer) return;
    const tick = () => {
      this.#running = this.runOnce().then(() => {
        if (this.#timer) this.#timer = setTimeout(tick, this.#intervalMs).unref();
      });
    };
    this.#timer = setTimeout(tick, this.#intervalMs).unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
