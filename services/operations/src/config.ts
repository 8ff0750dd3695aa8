import { loadConfig, serviceUrls } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";
import { z } from "zod";

export const configSchema = grpcServiceConfig(50051, 9101).extend({
  LEDGER_URL: serviceUrls.LEDGER_URL,
  /** The self-matching pool (payins and payouts routed to `self_matching`). */
  MATCHING_URL: serviceUrls.MATCHING_URL,
  /** How long a payin's slot in a pool payout holds: the payin's `expires_at`. */
  POOL_SLOT_LIFETIME_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000)
    .default(30 * 60_000),
  /** How long a payout routed to `self_matching` stays in the pool before its remainder is handed off. */
  POOL_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(60 * 60_000),
  /**
   * Unanswered asks of one hand-off provider after which each further ask is logged as an
   * error for an operator. It is never passed over for that: only a definite answer (its
   * status says never received, rejected or withdrawn) lets the next one be asked.
   */
  POOL_HANDOFF_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(6),
  /** Wait before asking a hand-off provider that did not answer again; doubles per ask. */
  POOL_HANDOFF_BACKOFF_MS: z.coerce.number().int().min(1).default(5_000),
  /** The longest wait between two asks of one hand-off provider. */
  POOL_HANDOFF_BACKOFF_MAX_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(5 * 60_000),
  /** How often due hand-offs are looked for besides the NOTIFY of a new one. */
  POOL_HANDOFF_INTERVAL_MS: z.coerce.number().int().min(10).default(1_000),
  /** How often due withdrawals (cancel → provider) are looked for besides the NOTIFY of a new one. */
  WITHDRAW_INTERVAL_MS: z.coerce.number().int().min(10).default(1_000),
  /** Wait before asking a provider that did not answer a withdrawal again; doubles per ask. */
  WITHDRAW_BACKOFF_MS: z.coerce.number().int().min(1).default(5_000),
  /** Unanswered withdrawal asks before it is given up (a later completion is a provider fact). */
  WITHDRAW_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(10),
  /** Lifetime of a flexible link in `amount_selection`. */
  FLEXIBLE_LINK_LIFETIME_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000)
    .default(30 * 60_000),
  /**
   * HMAC key of the flexible link credential `k` (at least 32 characters), shared by every
   * replica. Unset: a random key per process (a warning at start), so a retried create
   * answers another `k` after a restart or on another replica; set it in production.
   */
  FLEXIBLE_LINK_SECRET: z.string().min(32, "at least 32 characters").optional(),
  /** The receipts service: receipt reviews, operators' decisions, signed receipt links. */
  RECEIPTS_URL: serviceUrls.RECEIPTS_URL,
  /** Public base URL providers post their results to (the edge). */
  PROVIDER_CALLBACK_BASE_URL: z.string().url().default("http://127.0.0.1:8080"),
  /** The create wait of the spec: one budget for routing, all providers included. */
  CREATE_BUDGET_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** The longest one provider may take to answer before the next one in the route is asked. */
  PROVIDER_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(5_000),
  /**
   * How long a payout whose provider's answer stays unknown (no decline, no confirmed
   * withdrawal: `not_found` at any age is unknown) is resolved by the reconciler alone,
   * counted from its creation; past it the payout also goes to the operator queue (an
   * error log once, `operations_payouts_awaiting_operator`), where a person decides with
   * the provider's evidence. Never an automatic cascade.
   */
  PAYOUT_OPERATOR_HORIZON_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 3_600_000),
  /** How often the reconciler looks for due operations; 0 turns it off in this process. */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(0).default(5_000),
  /** Age after which an operation without a result is asked about, even before its expiry. */
  RECONCILE_AFTER_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30 * 60_000),
  /** Wait before asking again about an operation the provider still reports pending; doubles per question. */
  RECONCILE_BACKOFF_MS: z.coerce.number().int().min(1).default(60_000),
  /** The longest wait between two questions about one operation. */
  RECONCILE_BACKOFF_MAX_MS: z.coerce.number().int().min(1).default(3_600_000),
  /** Operations one pass leases at most. */
  RECONCILE_BATCH: z.coerce.number().int().min(1).max(1_000).default(100),
  /** Age after which a non-terminal operation is reported stuck (a warning and `operations_stuck`). */
  RECONCILE_ALERT_AFTER_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 3_600_000),
  /** Claims, or autocommit row writes, that one statement (one commit) carries at most. */
  WRITE_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(64),
  /**
   * How long a batched statement still in flight (waiting on a row lock, say) holds the
   * writes queued behind it before the next batch goes beside it.
   */
  WRITE_BATCH_STALL_MS: z.coerce.number().int().min(1).max(60_000).default(50),
});
export type OperationsConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
