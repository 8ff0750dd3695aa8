import type { Sql } from "@gw/db";
import type { Logger } from "@gw/log";
import { Agent, request } from "undici";
import { NO_ENDPOINT } from "./events.ts";
import { deliveryLag, deliveryOutcomes } from "./metrics.ts";
import { signAttempt } from "./signing.ts";
import { assertPublicLiteral, publicOnlyLookup } from "./targets.ts";

export interface DeliveryWorkerOptions {
  sql: Sql;
  logger: Logger;
  /** Waits after each failed attempt; after the last one the delivery is `failed`. */
  retryScheduleMs: number[];
  /** Safety poll when no NOTIFY woke the worker (another replica's insert, a due retry). */
  pollMs: number;
  /** Attempts in flight at once in this process. */
  concurrency: number;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Lets attempts reach private, loopback and link-local addresses (local runs only). */
  allowPrivateTargets: boolean;
}

/** A claimed delivery, as the attempt needs it. */
interface Claimed {
  event_id: string;
  shop_id: string;
  operation_id: string;
  operation_version: string;
  event_type: string;
  /** A string: drizzle sets the shared client to leave timestamps unparsed. */
  occurred_at: string;
  payload: string;
  attempts: number;
  retry_step: number;
}

interface EndpointRow {
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_valid: boolean | null;
}

/** Bytes of a receiver's response body read before the connection is dropped. */
const RESPONSE_BODY_LIMIT = 64 * 1024;

/** Postgres channel the consumer and Redeliver notify when a delivery becomes due. */
export const WAKE_CHANNEL = "webhooks_deliveries";

/**
 * Sends due deliveries. Replicas share the work: each claims due rows with FOR UPDATE
 * SKIP LOCKED and, in the same short transaction, leases them (`leased_until`) for longer
 * than any attempt can take, so no database connection is held while a merchant answers,
 * a redelivery requested mid-attempt does not start a second attempt, and a crashed
 * replica's deliveries become claimable again on their own.
 *
 * Order per operation: a delivery is not claimed while a delivery of an earlier version
 * of the same operation is still pending (in flight or waiting for a retry). A delivery
 * that ended `failed` no longer holds the later ones back.
 */
export class DeliveryWorker {
  readonly #o: DeliveryWorkerOptions;
  readonly #agent: Agent;
  readonly #leaseMs: number;
  readonly #inflight = new Set<Promise<void>>();
  #running = false;
  #woken = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: DeliveryWorkerOptions) {
    this.#o = options;
    // undici's request() follows no redirects (that takes an explicit interceptor), so a
    // 3xx is just a failed attempt and never leads the gateway somewhere else.
    this.#agent = new Agent({
      connect: {
        timeout: options.connectTimeoutMs,
        ...(options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup }),
      },
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
    });
    this.#leaseMs = options.connectTimeoutMs + options.headersTimeoutMs + options.bodyTimeoutMs + 30_000;
  }

  async start(): Promise<void> {
    this.#running = true;
    const listener = await this.#o.sql.listen(WAKE_CHANNEL, () => this.wake());
    this.#unlisten = () => listener.unlisten();
    this.#loop = this.#run();
  }

  /** Stops claiming, lets the attempts in flight finish (bounded by their timeouts). */
  async stop(): Promise<void> {
    this.#running = false;
    this.wake();
    await this.#loop;
    await Promise.allSettled([...this.#inflight]);
    await this.#unlisten?.().catch(() => {});
    await this.#agent.close();
  }

  /** Makes the worker look for due deliveries now. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      const free = this.#o.concurrency - this.#inflight.size;
      let claimed: Claimed[] = [];
      this.#woken = false;
      if (free > 0) {
        try {
          claimed = await this.#claim(free);
          failures = 0;
        } catch (err) {
          failures++;
          this.#o.logger.warn({ err, failures }, "claiming webhook deliveries failed; retrying");
        }
      }
      for (const row of claimed) {
        const p: Promise<void> = this.#attempt(row)
          .catch((err) => this.#o.logger.error({ err, eventId: row.event_id }, "webhook attempt crashed"))
          .finally(() => {
            this.#inflight.delete(p);
            // A finished delivery may release the next version of its operation.
            this.wake();
          });
        this.#inflight.add(p);
      }
      if (failures === 0 && free > 0 && claimed.length === free) continue;
      const waitMs = failures > 0 ? Math.min(5000, 100 * 2 ** failures) : this.#o.pollMs;
      await this.#sleep(waitMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    if (this.#woken || !this.#running) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }

  /** Claims up to `limit` due deliveries and leases them to this process. */
  async #claim(limit: number): Promise<Claimed[]> {
    const { sql } = this.#o;
    return sql<Claimed[]>`
      with due as (
        select d.event_id from webhooks.deliveries d
        where d.status = 'pending' and d.next_attempt_at <= now()
          and (d.leased_until is null or d.leased_until < now())
          and not exists (
            select 1 from webhooks.deliveries p
            where p.operation_id = d.operation_id and p.status = 'pending'
              and p.operation_version < d.operation_version)
        order by d.next_attempt_at
        limit ${limit}
        for update of d skip locked
      )
      update webhooks.deliveries d
      set attempts = d.attempts + 1,
          last_attempt_at = now(),
          leased_until = now() + make_interval(secs => ${this.#leaseMs / 1000})
      from due where d.event_id = due.event_id
      returning d.event_id, d.shop_id, d.operation_id, d.operation_version::text, d.event_type,
        d.occurred_at, d.payload, d.attempts, d.retry_step`;
  }

  /** One attempt of one claimed delivery, and its outcome recorded. */
  async #attempt(d: Claimed): Promise<void> {
    const { sql, logger } = this.#o;
    const started = performance.now();
    const [endpoint] = await sql<EndpointRow[]>`
      select url, secret, previous_secret, previous_secret_expires_at > now() as previous_valid
      from webhooks.endpoints where shop_id = ${d.shop_id}`;
    const context = {
      eventId: d.event_id,
      eventType: d.event_type,
      shopId: d.shop_id,
      operationId: d.operation_id,
      version: d.operation_version,
      attempt: d.attempts,
    };
    if (!endpoint) {
      await this.#fail(d, null, NO_ENDPOINT, true);
      deliveryOutcomes.inc({ outcome: "no_endpoint" });
      logger.warn({ ...context, outcome: "failed" }, "webhook not deliverable: no endpoint configured");
      return;
    }

    let statusCode: number | null = null;
    let error: string | null = null;
    let host = "";
    try {
      const url = new URL(endpoint.url);
      host = url.host;
      if (!this.#o.allowPrivateTargets) assertPublicLiteral(url);
      const secrets = [endpoint.secret];
      if (endpoint.previous_secret && endpoint.previous_valid) secrets.push(endpoint.previous_secret);
      const res = await request(url, {
        method: "POST",
        dispatcher: this.#agent,
        headers: {
          ...signAttempt(d.event_id, d.payload, secrets, new Date()),
          "content-type": "application/json",
          "user-agent": "gateway-webhooks/1",
        },
        body: d.payload,
      });
      statusCode = res.statusCode;
      // The body is not used; reading a bounded part lets the connection be reused.
      await res.body.dump({ limit: RESPONSE_BODY_LIMIT }).catch(() => {});
      if (statusCode < 200 || statusCode > 299) error = `HTTP ${statusCode}`;
    } catch (err) {
      error = describe(err);
    }
    const durationMs = Math.round(performance.now() - started);

    if (error === null) {
      await sql`
        update webhooks.deliveries
        set status = 'delivered', delivered_at = now(), next_attempt_at = null, leased_until = null,
            last_status_code = ${statusCode}, last_error = null
        where event_id = ${d.event_id} and attempts = ${d.attempts}`;
      deliveryOutcomes.inc({ outcome: "delivered" });
      deliveryLag.observe(Math.max(0, (Date.now() - Date.parse(d.occurred_at)) / 1000));
      logger.info({ ...context, host, statusCode, durationMs, outcome: "delivered" }, "webhook delivered");
      return;
    }
    const final = d.retry_step >= this.#o.retryScheduleMs.length;
    await this.#fail(d, statusCode, error, final);
    deliveryOutcomes.inc({ outcome: final ? "failed" : "retrying" });
    logger.warn(
      { ...context, host, statusCode, error, durationMs, outcome: final ? "failed" : "retrying" },
      final ? "webhook attempt failed; no attempts left" : "webhook attempt failed; retry scheduled",
    );
  }

  /**
   * Records a failed attempt: the next retry of the schedule, with up to 10% jitter so
   * that many deliveries failing together do not retry in lockstep, or `failed` when the
   * schedule is used up. The `attempts` guard keeps a stale attempt (one whose lease ran
   * out and was claimed again) from overwriting the newer one.
   */
  async #fail(d: Claimed, statusCode: number | null, error: string, final: boolean): Promise<void> {
    const { sql } = this.#o;
    if (final) {
      await sql`
        update webhooks.deliveries
        set status = 'failed', next_attempt_at = null, leased_until = null, last_status_code = ${statusCode}, last_error = ${error}
        where event_id = ${d.event_id} and attempts = ${d.attempts}`;
      return;
    }
    const waitMs = Math.round(this.#o.retryScheduleMs[d.retry_step]! * (1 + Math.random() * 0.1));
    await sql`
      update webhooks.deliveries
      set next_attempt_at = now() + make_interval(secs => ${waitMs / 1000}), leased_until = null,
          retry_step = retry_step + 1, last_status_code = ${statusCode}, last_error = ${error}
      where event_id = ${d.event_id} and attempts = ${d.attempts}`;
  }
}

/** A short, secret-free description of a transport error for the delivery log. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return "request failed";
  const code = (err as { code?: string }).code;
  const nested = err instanceof AggregateError ? err.errors[0] : (err as { cause?: unknown }).cause;
  const message = err.message || (nested instanceof Error ? nested.message : "");
  return `${code ?? err.name}: ${message}`.slice(0, 300);
}
