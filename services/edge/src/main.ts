import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startEdge } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startEdge(withTelemetry("edge", readConfig())));
