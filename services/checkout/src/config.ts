import { loadConfig, platformConfig, port } from "@gw/config";
import { z } from "zod";

/** Checkout keeps no data of its own: where to listen, and operations to read and confirm through. */
export const configSchema = z.object({
  ...platformConfig,
  HOST: z.string().default("127.0.0.1"),
  PORT: port(8081),
  METRICS_PORT: port(9106),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  OPERATIONS_URL: z.string().url().default("http://127.0.0.1:50051"),
  /** The largest receipt the page takes: the receipts service's storage limit (the same variable). */
  RECEIPT_STORE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(20 * 1024 * 1024),
});
export type CheckoutConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
