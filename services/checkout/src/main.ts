import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startCheckout } from "./app.ts";
import { readConfig } from "./config.ts";

stopOnSignals(await startCheckout(withTelemetry("checkout", readConfig())));
