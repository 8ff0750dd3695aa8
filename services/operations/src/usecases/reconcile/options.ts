import type { Client } from "@connectrpc/connect";
import type { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { metricsRegistry } from "@gw/rpc";
import { Gauge } from "prom-client";
import type { OperationsConfig } from "../../config.ts";
import type { OperationStore } from "../../repository/operations.ts";
import type { CreateDeps } from "../../steps/create.ts";

/** What the reconciler needs: a create's dependencies, and the receipts service for reviews it resumes. */
export type ReconcilerDeps = CreateDeps & { store: OperationStore; receipts: Client<typeof ReceiptsService> };

/** Payouts in the operator queue still unresolved; database-wide, so take the max over replicas. */
export const payoutsAwaitingOperator = new Gauge({
  name: "operations_payouts_awaiting_operator",
  help: "Payouts whose provider's answer stayed unknown past PAYOUT_OPERATOR_HORIZON_MS and are still routing: an operator decides.",
  registers: [metricsRegistry],
});

/**
 * Operations non-terminal for longer than `RECONCILE_ALERT_AFTER_MS`, per status. Every
 * replica reports the same database-wide count, so dashboards take the max, not the sum.
 */
export const stuckOperations = new Gauge({
  name: "operations_stuck",
  help: "Operations still non-terminal after RECONCILE_ALERT_AFTER_MS, by status.",
  labelNames: ["status"],
  registers: [metricsRegistry],
});

export interface ReconcilerOptions {
  /** How often to look for due operations when the last pass found less than a batch. */
  intervalMs: number;
  /** Age after which an operation without a result is asked about, before its expiry too. */
  afterMs: number;
  /** First wait before asking about an operation again; doubles per question. */
  backoffMs: number;
  backoffMaxMs: number;
  /** Operations leased by one pass at most. */
  batchSize: number;
  /** Age after which a non-terminal operation is reported stuck. */
  alertAfterMs: number;
  /** Age after which a payout still unresolved goes to the operator queue (`PAYOUT_OPERATOR_HORIZON_MS`). */
  operatorHorizonMs: number;
}

/** The reconciler's settings from the service config. */
export const reconcilerOptions = (config: OperationsConfig): ReconcilerOptions => ({
  intervalMs: config.RECONCILE_INTERVAL_MS,
  afterMs: config.RECONCILE_AFTER_MS,
  backoffMs: config.RECONCILE_BACKOFF_MS,
  backoffMaxMs: config.RECONCILE_BACKOFF_MAX_MS,
  batchSize: config.RECONCILE_BATCH,
  alertAfterMs: config.RECONCILE_ALERT_AFTER_MS,
  operatorHorizonMs: config.PAYOUT_OPERATOR_HORIZON_MS,
});

/** What one pass did, by outcome; `claimed` is the number of operations it leased. */
export interface PassSummary {
  claimed: number;
  completed: number;
  rejected: number;
  expired: number;
  routed: number;
  pending: number;
  /** Settled by someone else (a callback, a cancel) between the lease and the answer. */
  unchanged: number;
  failed: number;
  alerted: number;
}

export type Outcome = Exclude<keyof PassSummary, "claimed" | "alerted">;

/** Operations of one pass handled at once: bounds the provider calls in flight. */
export const PARALLEL = 8;

/** Warnings raised by one pass at most; the rest follow in the next passes. */
export const ALERT_BATCH = 100;

/**
 * The stuck alert and gauge read every non-terminal row (`manual_check` is outside the
 * partial index of open rows), so they run every ten intervals, at most once a minute
 * apart, rather than on every pass.
 */
export const ALERT_EVERY_INTERVALS = 10;

export const ALERT_EVERY_MAX_MS = 60_000;
