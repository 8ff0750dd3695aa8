import { loadConfig, port } from "@gw/config";
import { z } from "zod";

/** Checkout keeps no data of its own: it needs only where to listen. */
export const configSchema = z.object({
  HOST: z.string().default("127.0.0.1"),
  PORT: port(8081),
  METRICS_PORT: port(9106),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
});
export type CheckoutConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
