import { z } from "zod";

/**
 * Parses the process environment once, at start, against a zod schema. A bad value
 * stops the process with one line naming the variable; nothing else in a service reads
 * `process.env`.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const variable = issue?.path.join(".") ?? "environment";
  console.error(`config: ${variable}: ${issue?.message ?? "invalid"}`);
  process.exit(78);
}

/** A TCP port from the environment, with a default. */
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/**
 * Observability and internal access, read by every process (docs/operations.md,
 * "Observability" and "Internal access").
 */
export const platformConfig = {
  /**
   * The key set of internal service tokens: comma-separated `<id>:<base64url secret>`
   * (32 bytes or more), the first one signing. Unset, gRPC servers take any caller and
   * clients send no token: set it everywhere or nowhere.
   */
  SERVICE_TOKEN_KEYS: z.string().min(1).optional(),
  /** OTLP/HTTP collector base URL (`/v1/traces` is appended); unset, traces are not exported. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
};

/** The settings every service shares: where Postgres and NATS are, and the event subject prefix. */
export const commonConfig = {
  ...platformConfig,
  DATABASE_URL: z.string().url().default("postgres://postgres@127.0.0.1:5432/gateway"),
  NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  /** Prefix of every NATS subject and stream name, so that stacks (and test runs) can share one server. */
  EVENTS_PREFIX: z
    .string()
    .regex(/^[a-z][a-z0-9_]*$/, "lowercase letters, digits and underscores")
    .default("gw"),
  /**
   * Copies JetStream keeps of the events stream: 1 on a single server, 3 on a three-node
   * cluster (so one server can fail without losing an acknowledged event).
   */
  EVENTS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  HOST: z.string().default("127.0.0.1"),
};

/** Addresses of the gRPC services, as their clients see them. */
export const serviceUrls = {
  OPERATIONS_URL: z.string().url().default("http://127.0.0.1:50051"),
  MATCHING_URL: z.string().url().default("http://127.0.0.1:50052"),
  LEDGER_URL: z.string().url().default("http://127.0.0.1:50053"),
  RECEIPTS_URL: z.string().url().default("http://127.0.0.1:50054"),
  WEBHOOKS_URL: z.string().url().default("http://127.0.0.1:50055"),
};
