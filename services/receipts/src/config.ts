import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";

export const configSchema = grpcServiceConfig(50054, 9104);
export const readConfig = () => loadConfig(configSchema);
