import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startSandbox } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startSandbox(withTelemetry("sandbox-provider", readConfig())));
