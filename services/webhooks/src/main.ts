import { stopOnSignals } from "@gw/runtime";
import { startWebhooks } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startWebhooks(readConfig()));
