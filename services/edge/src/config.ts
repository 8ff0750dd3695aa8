import { commonConfig, loadConfig, port, serviceUrls } from "@gw/config";
import { z } from "zod";
import { DEFAULT_ADMISSION } from "./admission.ts";

/** The edge's settings: the common ones, its two ports, the downstream services and its own secrets. */
export const configSchema = z.object({
  ...commonConfig,
  ...serviceUrls,
  PORT: port(8080),
  METRICS_PORT: port(9100),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** The bearer token of the admin API; a short one is refused at start. */
  ADMIN_TOKEN: z.string().min(32, "at least 32 characters"),
  /** Where the hosted checkout pages live; `payment_url` is `${PAY_URL}/<operation_id>`. */
  /** The largest receipt upload: the receipts service's storage limit (the same variable). */
  RECEIPT_STORE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(20 * 1024 * 1024),
  /** Admission control per replica: merchant API requests served at once. */
  MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(DEFAULT_ADMISSION.maxInFlight),
  /** ... how many more may wait for a slot (one more is answered 503 at once). */
  MAX_QUEUE: z.coerce.number().int().min(0).default(DEFAULT_ADMISSION.maxQueue),
  /** ... and for how long, before it is answered 503 with Retry-After. */
  QUEUE_TIMEOUT_MS: z.coerce.number().int().min(1).default(DEFAULT_ADMISSION.queueTimeoutMs),
  /** ... of which one API key may hold this many (served or waiting); one more is answered 429. */
  MAX_IN_FLIGHT_PER_KEY: z.coerce.number().int().min(1).default(DEFAULT_ADMISSION.maxInFlightPerKey),
  PAY_URL: z
    .string()
    .url()
    .default("http://127.0.0.1:8081")
    .transform((url) => url.replace(/\/+$/, "")),
});
export type EdgeConfig = z.infer<typeof configSchema>;

export const readConfig = () => loadConfig(configSchema);
