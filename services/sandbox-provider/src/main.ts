import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startSandbox } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startSandbox(withTelemetry("sandbox-provider", readConfig())));
