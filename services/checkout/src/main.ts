import { stopOnSignals } from "@gw/runtime";
import { startCheckout } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startCheckout(readConfig()));
