import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";

export const configSchema = grpcServiceConfig(50052, 9102);
export const readConfig = () => loadConfig(configSchema);
