import { stopOnSignals } from "@gw/runtime";
import { startEdge } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startEdge(readConfig()));
