import { stopOnSignals, withTelemetry } from "@gw/runtime";
import { startCheckout } from "./app.ts";
import { readConfig } from "./config.ts";

await stopOnSignals(startCheckout(withTelemetry("checkout", readConfig())));
