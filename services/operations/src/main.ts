import { stopOnSignals } from "@gw/runtime";
import { startOperations } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startOperations(readConfig()));
