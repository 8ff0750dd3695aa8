import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";

export const configSchema = grpcServiceConfig(50053, 9103);
export type LedgerConfig = ReturnType<typeof readConfig>;
export const readConfig = () => loadConfig(configSchema);
