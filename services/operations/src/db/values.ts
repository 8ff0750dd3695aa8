/**
 * The values each constrained text column of the schema may hold, as its `CHECK` lists
 * them. The domain's tables are where these states mean something (the lifecycle in
 * domain/operation-states.ts, the side machines in domain/*-states.ts); the schema keeps
 * its own copy so that it imports nothing of the service, and the tests hold the two
 * equal: domain/state-machines.unit.test.ts against the migrations' SQL,
 * repository/state-checks.test.ts against a migrated database.
 */
export const OPERATION_STATUSES = [
  "routing",
  "pending",
  "awaiting_confirmation",
  "manual_check",
  "completed",
  "rejected",
  "cancelled",
] as const;
export const OPERATION_TYPES = ["payment", "payout"] as const;
export const LINK_STATES = ["deciding", "amount_selection", "created", "rejected"] as const;
export const HANDOFF_STATES = ["asking", "accepted", "exhausted", "superseded"] as const;
export const FACT_STATES = ["open", "resolved"] as const;
export const FACT_KINDS = ["late_completion", "not_routed", "slot_refused", "amount_mismatch"] as const;
export const FACT_DIRECTIONS = ["payin", "payout"] as const;
export const FACT_RESOLUTIONS = ["credit_shop", "return_to_payer", "debit_shop", "write_off"] as const;
export const WITHDRAWAL_STATES = [
  "asking",
  "withdrawn",
  "not_found",
  "final",
  "not_supported",
  "gave_up",
  "held",
] as const;
