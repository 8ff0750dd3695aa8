/**
 * The stored statuses of an operation (`operations.operations.status`): the states of the
 * lifecycle table as stored (`STORED_STATUS` in lifecycle/table.ts; two internal states
 * share a stored status with a public one). The schema's `CHECK` lists the same values in
 * its own copy (db/values.ts); tests hold the two equal.
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

/** The types of an operation (`operations.operations.type`), as its `CHECK` lists them. */
export const OPERATION_TYPES = ["payment", "payout"] as const;
