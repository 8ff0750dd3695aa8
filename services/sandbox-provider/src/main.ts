import { stopOnSignals } from "@gw/runtime";
import { startSandbox } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startSandbox(readConfig()));
