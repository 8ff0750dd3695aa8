import { stopOnSignals } from "@gw/runtime";
import { startLedger } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startLedger(readConfig()));
