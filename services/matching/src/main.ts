import { stopOnSignals } from "@gw/runtime";
import { startMatching } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startMatching(readConfig()));
