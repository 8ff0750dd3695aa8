import { type Logger, pino } from "pino";

export type { Logger };

/**
 * Paths that may carry secrets. pino replaces them with "[redacted]" wherever a log
 * call passes them, so API keys, link credentials, webhook secrets and signed URLs never
 * reach a log line.
 */
const REDACT = [
  "apiKey",
  "api_key",
  "secret",
  "credentials",
  "token",
  "authorization",
  "password",
  "receipt_url",
  "payment_url",
  "*.apiKey",
  "*.api_key",
  "*.secret",
  "*.credentials",
  "*.token",
  "*.authorization",
  "*.receipt_url",
  "*.payment_url",
  'headers["x-api-key"]',
  "headers.authorization",
  'req.headers["x-api-key"]',
  "req.headers.authorization",
];

/** Creates the JSON logger of one service process. */
export function createLogger(service: string, level = "info"): Logger {
  return pino({
    level,
    base: { service },
    redact: { paths: REDACT, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
