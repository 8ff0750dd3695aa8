import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { Counter } from "prom-client";
import { request } from "undici";
import type { SandboxConfig } from "./config.ts";
import { SIGNATURE_HEADER, signatureHeader } from "./signature.ts";

const deliveries = new Counter({
  name: "sandbox_callback_attempts_total",
  help: "Callback delivery attempts by result (delivered, refused, failed, abandoned).",
  labelNames: ["result"],
  registers: [metricsRegistry],
});

/** What one delivery attempt found out, as the settle call reports it. */
export interface DeliveryReport {
  delivered: boolean;
  attempts: number;
  /** The receiver's HTTP status, when it answered at all. */
  status_code?: number;
  error?: string;
}

interface DueCallback {
  id: string;
  url: string;
  body: string;
  attempts: number;
  credentials: string;
}

/** At most this many callbacks are claimed and sent at once by one worker pass. */
const BATCH = 10;
/** One worker pass claims at most this many batches before sleeping again. */
const MAX_BATCHES_PER_PASS = 10;

/**
 * Delivers result callbacks and retries the failed ones in the background. All state
 * lives in `sandbox.callbacks`: a due row is claimed by moving its `next_attempt_at` past
 * the attempt's deadline, so a crash mid-attempt only delays the next one, and replicas
 * never send the same attempt twice.
 */
export class CallbackSender {
  readonly #sql: Sql;
  readonly #config: SandboxConfig;
  readonly #logger: Logger;
  #stopped = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(sql: Sql, config: SandboxConfig, logger: Logger) {
    this.#sql = sql;
    this.#config = config;
    this.#logger = logger;
  }

  /** The lease a claim takes: longer than one attempt can last. */
  get leaseMs(): number {
    return this.#config.CALLBACK_TIMEOUT_MS + 5_000;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  /** Sends a callback that the caller has just created (and so already holds the lease of). */
  async sendClaimed(id: string): Promise<DeliveryReport> {
    const [row] = await this.#sql<DueCallback[]>`
      select c.id, c.url, c.body, c.attempts, p.credentials
      from sandbox.callbacks c
      join sandbox.operations o on o.id = c.operation_id
      join sandbox.providers p on p.name = o.provider
      where c.id = ${id}`;
    if (!row) throw new Error(`callback ${id} not found`);
    return this.#attempt(row);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        for (let i = 0; i < MAX_BATCHES_PER_PASS && !this.#stopped; i++) {
          if ((await this.#pass()) < BATCH) break;
        }
      } catch (err) {
        this.#logger.error({ err }, "callback retry pass failed");
      }
      if (this.#stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#config.CALLBACK_POLL_MS);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Claims one batch of due callbacks and attempts each; returns how many it claimed. */
  async #pass(): Promise<number> {
    const rows = await this.#sql<DueCallback[]>`
      with due as (
        select id from sandbox.callbacks
        where delivered_at is null and abandoned_at is null and next_attempt_at <= now()
        order by next_attempt_at
        limit ${BATCH}
        for update skip locked
      ), claimed as (
        update sandbox.callbacks c
        set next_attempt_at = now() + make_interval(secs => ${this.leaseMs / 1000})
        from due where c.id = due.id
        returning c.id, c.url, c.body, c.attempts, c.operation_id
      )
      select claimed.id, claimed.url, claimed.body, claimed.attempts, p.credentials
      from claimed
      join sandbox.operations o on o.id = claimed.operation_id
      join sandbox.providers p on p.name = o.provider`;
    await Promise.all(rows.map((row) => this.#attempt(row)));
    return rows.length;
  }

  /** One signed POST; records the outcome and schedules the next attempt if it failed. */
  async #attempt(row: DueCallback): Promise<DeliveryReport> {
    const timestamp = Math.floor(Date.now() / 1000);
    let statusCode: number | undefined;
    let error: string | undefined;
    try {
      const res = await request(row.url, {
        method: "POST",
        body: row.body,
        headers: {
          "content-type": "application/json",
          "user-agent": "sandbox-provider",
          [SIGNATURE_HEADER]: signatureHeader(row.credentials, timestamp, row.body),
        },
        headersTimeout: this.#config.CALLBACK_TIMEOUT_MS,
        bodyTimeout: this.#config.CALLBACK_TIMEOUT_MS,
        signal: AbortSignal.timeout(this.#config.CALLBACK_TIMEOUT_MS),
      });
      statusCode = res.statusCode;
      // The body is not needed, but it must be consumed so the connection is reused.
      await res.body.dump();
      if (statusCode < 200 || statusCode > 299) error = `receiver answered ${statusCode}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const attempts = row.attempts + 1;
    const delivered = error === undefined;
    if (delivered) {
      await this.#sql`
        update sandbox.callbacks
        set delivered_at = now(), attempts = ${attempts}, last_status_code = ${statusCode ?? null}, last_error = null
        where id = ${row.id} and delivered_at is null`;
      deliveries.inc({ result: "delivered" });
    } else if (attempts >= this.#config.CALLBACK_MAX_ATTEMPTS) {
      await this.#sql`
        update sandbox.callbacks
        set abandoned_at = now(), attempts = ${attempts}, last_status_code = ${statusCode ?? null}, last_error = ${error ?? null}
        where id = ${row.id} and delivered_at is null`;
      deliveries.inc({ result: "abandoned" });
      this.#logger.warn({ callbackId: row.id, attempts, error }, "callback abandoned");
    } else {
      const delayMs = Math.min(
        this.#config.CALLBACK_RETRY_BASE_MS * 2 ** Math.min(attempts - 1, 30),
        this.#config.CALLBACK_RETRY_MAX_MS,
      );
      await this.#sql`
        update sandbox.callbacks
        set next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}), attempts = ${attempts},
            last_status_code = ${statusCode ?? null}, last_error = ${error ?? null}
        where id = ${row.id} and delivered_at is null`;
      deliveries.inc({ result: statusCode === undefined ? "failed" : "refused" });
      this.#logger.info(
        { callbackId: row.id, attempts, delayMs, error },
        "callback delivery failed, will retry",
      );
    }
    const report: DeliveryReport = { delivered, attempts };
    if (statusCode !== undefined) report.status_code = statusCode;
    if (error !== undefined) report.error = error;
    return report;
  }
}
