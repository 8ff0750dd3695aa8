/**
 * The stored statuses of an operation (`operations.operations.status`): the states of the
 * lifecycle table as stored (`STORED_STATUS` in lifecycle/table.ts; two internal states
 * share a stored status with a public one). The schema's `CHECK` lists these; a test holds
 * them equal to the lifecycle table's. Kept apart from the table so that the schema,
 * which the model's row types read, imports nothing that imports the model.
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
