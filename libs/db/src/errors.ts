/** True for a Postgres unique_violation (23505), optionally on one named constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string } | null;
  return e?.code === "23505" && (constraint === undefined || e.constraint_name === constraint);
}

/** True for serialization_failure (40001) and deadlock_detected (40P01): safe to retry. */
export function isSerializationFailure(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "40001" || code === "40P01";
}

/**
 * Runs a transaction function again when Postgres aborted it for a serialization
 * failure or a deadlock. Bounded: after `attempts` tries the last error is thrown.
 */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts || !isSerializationFailure(err)) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * i));
    }
  }
}
