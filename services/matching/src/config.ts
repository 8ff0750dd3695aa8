import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";
import { z } from "zod";
import { READ_BUDGET_MS } from "./policy.ts";

export const configSchema = grpcServiceConfig(50052, 9102).extend({
  /** How often the sweep releases expired slots and closes ended pool windows. */
  POOL_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /** The downstream budget of one availability or recommendations read (the spec's 2 s). */
  READ_BUDGET_MS: z.coerce.number().int().min(1).max(READ_BUDGET_MS).default(READ_BUDGET_MS),
});
export type MatchingConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
