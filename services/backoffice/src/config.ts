import { loadConfig, platformConfig, port } from "@gw/config";
import { z } from "zod";

/** The back office: its own sessions in Postgres, and the edge's admin API for everything else. */
export const configSchema = z.object({
  ...platformConfig,
  HOST: z.string().default("127.0.0.1"),
  PORT: port(8084),
  METRICS_PORT: port(9109),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  DATABASE_URL: z.string().url().default("postgres://postgres@127.0.0.1:5432/gateway"),
  DB_POOL_MAX: z.coerce.number().int().min(2).max(50).default(4),
  /** The edge's base URL: the back office calls `${ADMIN_API_URL}/admin/v1`. */
  ADMIN_API_URL: z.string().url().default("http://127.0.0.1:8080"),
  /** The edge's admin token: what an operator types to log in, and what the back office calls with. */
  ADMIN_TOKEN: z.string().min(32, "ADMIN_TOKEN must be at least 32 characters"),
  /** Idle timeout of a session, minutes. */
  SESSION_IDLE_MINUTES: z.coerce.number().int().min(1).max(480).default(30),
  /** Absolute lifetime of a session, hours. */
  SESSION_TTL_HOURS: z.coerce.number().int().min(1).max(24).default(8),
});
export type BackofficeConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
