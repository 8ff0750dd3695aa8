import { loadConfig, serviceUrls } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";
import { z } from "zod";

export const configSchema = grpcServiceConfig(50051, 9101).extend({
  LEDGER_URL: serviceUrls.LEDGER_URL,
  /** Public base URL providers post their results to (the edge). */
  PROVIDER_CALLBACK_BASE_URL: z.string().url().default("http://127.0.0.1:8080"),
  /** The create wait of the spec: one budget for routing, all providers included. */
  CREATE_BUDGET_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** The longest one provider may take to answer before the next one in the route is asked. */
  PROVIDER_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(5_000),
});
export type OperationsConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
