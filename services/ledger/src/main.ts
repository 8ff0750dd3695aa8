import { stopOnSignals } from "@gw/runtime";
import { startLedger } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startLedger(readConfig()));
