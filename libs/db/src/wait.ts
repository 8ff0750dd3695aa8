/**
 * Postgres error codes of a server that is starting, recovering or shutting down: it will
 * take connections again shortly (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
 * cannot_connect_now, 08001 and 08006 connection failures).
 */
const SERVER_NOT_READY = new Set(["57P01", "57P02", "57P03", "08001", "08006"]);

/**
 * Errors of the socket or of postgres.js's own connection handling while the server is
 * down or restarting. A name that does not resolve is left out on purpose: it is far more
 * often a wrong DATABASE_URL, which must stop the process at once.
 */
const CONNECTION_LOST = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECT_TIMEOUT",
]);

/** True when `err` says the database is not there yet (or not any more), so asking again later may succeed. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && (SERVER_NOT_READY.has(code) || CONNECTION_LOST.has(code));
}

/** Thrown when the database stayed unavailable for every attempt a wait allows. */
export class DatabaseUnavailableError extends Error {
  readonly code = "DATABASE_UNAVAILABLE";
  override readonly name = "DatabaseUnavailableError";
  /** Tries made, the last one included. */
  readonly attempts: number;
  constructor(attempts: number, options: { cause: unknown }) {
    super(`the database stayed unavailable for ${attempts} attempts`, options);
    this.attempts = attempts;
  }
}

/** Where a wait reports each pause (a pino logger fits). */
export interface WaitLogger {
  warn(fields: object, message: string): void;
}

/** How long to wait for the database: at most `attempts` tries, pausing longer after each. */
export interface WaitPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** Pause after the first failure; each later pause doubles, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * About 75 s of pauses in all (0.2, 0.4, … 3.2 s, then 5 s each): longer than a Postgres
 * restart or crash recovery usually takes, and shorter than the 2 minutes the startup
 * probe of the deployment allows, so that a database that does not come back still ends
 * in an exit and a restart that someone sees.
 */
export const DEFAULT_WAIT: WaitPolicy = { attempts: 20, firstDelayMs: 200, maxDelayMs: 5_000 };

/**
 * Runs `fn` until it succeeds, again after a pause whenever it fails because the database
 * is unavailable (see isDatabaseUnavailable), logging each pause. Any other error is
 * thrown at once. `fn` must be safe to run again after a failure part way through.
 *
 * @throws DatabaseUnavailableError after `policy.attempts` tries, with the last error as cause.
 */
export async function whenDatabaseAvailable<T>(
  what: string,
  fn: () => Promise<T>,
  logger: WaitLogger,
  policy: WaitPolicy = DEFAULT_WAIT,
): Promise<T> {
  let delayMs = policy.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      if (attempt >= policy.attempts) throw new DatabaseUnavailableError(attempt, { cause: err });
      const { code, message } = err as { code: string; message?: string };
      logger.warn(
        { code, reason: message, attempt, attempts: policy.attempts, delay_ms: delayMs },
        `database unavailable, ${what} waits and tries again`,
      );
      await new Promise((r) => setTimeout(r, delayMs));
      delayMs = Math.min(delayMs * 2, policy.maxDelayMs);
    }
  }
}
