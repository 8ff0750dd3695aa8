import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";
import { z } from "zod";

/** A boolean flag from the environment: `true`/`1` or `false`/`0`, nothing looser. */
const flag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0"])
    .default(fallback ? "true" : "false")
    .transform((v) => v === "true" || v === "1");

/** A positive whole number of milliseconds. */
const ms = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * The wait after each failed attempt: 12 attempts over about 31.7 hours, so a merchant
 * endpoint that is down for a whole day still gets every event once it is back.
 */
export const DEFAULT_RETRY_SCHEDULE_MS = [
  5_000,
  30_000,
  2 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  4 * HOUR,
  8 * HOUR,
  8 * HOUR,
  8 * HOUR,
];

/** A comma-separated list of waits in milliseconds, for example `5000,30000,120000`. */
const retrySchedule = z
  .string()
  .default(DEFAULT_RETRY_SCHEDULE_MS.join(","))
  .transform((s, ctx) => {
    const steps = s.split(",").map((part) => Number(part.trim()));
    if (steps.length === 0 || steps.some((n) => !Number.isInteger(n) || n < 1)) {
      ctx.addIssue({ code: "custom", message: "a comma-separated list of positive whole milliseconds" });
      return z.NEVER;
    }
    // A bounded schedule bounds the work one undeliverable event can cause.
    if (steps.length > 100) {
      ctx.addIssue({ code: "custom", message: "at most 100 steps" });
      return z.NEVER;
    }
    return steps;
  });

export const configSchema = grpcServiceConfig(50055, 9105).extend({
  /**
   * Allows endpoint URLs on private, loopback and link-local addresses. Only the local
   * stack and tests turn this on; in production it stops merchants from making the
   * gateway call into its own network.
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: flag(false),
  /** Waits after each failed attempt; after the last one the delivery is `failed`. */
  WEBHOOK_RETRY_SCHEDULE_MS: retrySchedule,
  /** How often the worker looks for due deliveries when no notification woke it. */
  WEBHOOK_POLL_MS: ms(1000),
  /** Attempts in flight at once per replica. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  WEBHOOK_CONNECT_TIMEOUT_MS: ms(5000),
  WEBHOOK_HEADERS_TIMEOUT_MS: ms(10_000),
  WEBHOOK_BODY_TIMEOUT_MS: ms(10_000),
  /** How long signatures with the previous secret are still sent after a rotation. */
  WEBHOOK_SECRET_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * HOUR),
});

export type WebhooksConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
