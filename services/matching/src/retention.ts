import type { RetentionRule } from "@gw/db";

/**
 * A payin's routing generations (`matching.payin_generations`, one row per admitted
 * payin) order an Admit against the release of its own attempt, which is seconds apart
 * (bounded by the provider attempt timeout). A week after its last change, and with no
 * slot of the payin still reserved, no Admit of an attempt it knows can still arrive: the
 * row goes. A payin admitted again later starts a new row (a newer generation).
 */
export const PAYIN_GENERATIONS_KEEP_MS = 7 * 24 * 3_600_000;
/** Released slots (no money held) stay this long for an operator's questions, then go. */
export const RELEASED_SLOTS_KEEP_MS = 30 * 24 * 3_600_000;

/** The matching service's retention rules (docs/operations.md, "Retention"). */
export const MATCHING_RETENTION: RetentionRule[] = [
  {
    table: "matching.payin_generations",
    ageColumn: "updated_at",
    keepMs: PAYIN_GENERATIONS_KEEP_MS,
    where:
      "not exists (select 1 from matching.slots s where s.payin_id = t.payin_id and s.status = 'reserved')",
  },
  {
    table: "matching.slots",
    ageColumn: "settled_at",
    keepMs: RELEASED_SLOTS_KEEP_MS,
    where: "t.status = 'released'",
  },
];
