import { commonConfig, loadConfig, platformConfig, port } from "@gw/config";
import { z } from "zod";

const ms = (fallback: number) => z.coerce.number().int().min(1).max(86_400_000).default(fallback);

/** Settings of the sandbox provider. It needs Postgres but not NATS: it is outside the gateway. */
export const configSchema = z.object({
  ...platformConfig,
  DATABASE_URL: commonConfig.DATABASE_URL,
  LOG_LEVEL: commonConfig.LOG_LEVEL,
  HOST: commonConfig.HOST,
  HTTP_PORT: port(8082),
  METRICS_PORT: port(9107),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** When set, the control API requires `Authorization: Bearer <CONTROL_TOKEN>`. */
  CONTROL_TOKEN: z.string().min(1).optional(),
  /** A `no_answer` request is held at most this long, so a client that never gives up cannot pin it forever. */
  NO_ANSWER_MAX_MS: ms(600_000),
  /** Time allowed for one callback delivery, connect to response. */
  CALLBACK_TIMEOUT_MS: ms(10_000),
  /** First retry delay of a failed callback; each retry doubles it up to CALLBACK_RETRY_MAX_MS. */
  CALLBACK_RETRY_BASE_MS: ms(1_000),
  CALLBACK_RETRY_MAX_MS: ms(300_000),
  /** Attempts per callback before it is abandoned (25 attempts span about 1.5 hours by default). */
  CALLBACK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(1000).default(25),
  /** How often the retry worker looks for due callbacks. */
  CALLBACK_POLL_MS: ms(500),
});
export type SandboxConfig = z.infer<typeof configSchema>;

export const readConfig = () => loadConfig(configSchema);
