import { stopOnSignals } from "@gw/runtime";
import { startMatching } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startMatching(readConfig()));
