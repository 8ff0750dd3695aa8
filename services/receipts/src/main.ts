import { stopOnSignals } from "@gw/runtime";
import { startReceipts } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startReceipts(readConfig()));
