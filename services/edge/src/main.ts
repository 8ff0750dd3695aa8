import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startEdge } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startEdge(withTelemetry("edge", readConfig())));
