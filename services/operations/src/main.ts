import { stopOnSignals } from "@gw/runtime";
import { startOperations } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startOperations(readConfig()));
