import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { readConfig } from "./config.ts";
import { startBackoffice } from "./server.ts";

await stopOnSignals(startBackoffice(withTelemetry("backoffice", readConfig())));
