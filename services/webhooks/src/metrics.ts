import { metricsRegistry } from "@gw/rpc";
import { Counter, Histogram } from "prom-client";

/**
 * Delivery attempts by outcome: `delivered` (2xx), `retrying` (failed, another attempt
 * scheduled), `failed` (failed, no attempt left) and `no_endpoint` (recorded failed
 * because the shop has no endpoint).
 */
export const deliveryOutcomes = new Counter({
  name: "webhook_deliveries_total",
  help: "Webhook delivery attempts by outcome (delivered, retrying, failed, no_endpoint).",
  labelNames: ["outcome"],
  registers: [metricsRegistry],
});

/** From the event (the state change) to the merchant's 2xx, retries included. */
export const deliveryLag = new Histogram({
  name: "webhook_delivery_lag_seconds",
  help: "Time from an operation event to its successful webhook delivery.",
  buckets: [
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
    4 * 3600,
    12 * 3600,
    24 * 3600,
    48 * 3600,
  ],
  registers: [metricsRegistry],
});
