import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * Provider faults: how a misbehaving provider answers, chosen per request by a seeded
 * roll, so one run mixes them and the same seed, provider, direction and reference always
 * pick the same fault (a run repeats for the operations it repeats).
 *
 * Each stage has its own table of probabilities; one roll per stage picks at most one
 * fault of that stage (the probabilities of a stage add up to at most 1, the rest is
 * "no fault").
 */

const probability = z.number().min(0).max(1);
const stage = <K extends string>(kinds: readonly [K, ...K[]]) =>
  z
    .partialRecord(z.enum(kinds), probability)
    .refine(
      (t) => (Object.values(t) as (number | undefined)[]).reduce<number>((s, p) => s + (p ?? 0), 0) <= 1,
      {
        message: "the probabilities of one stage add up to at most 1",
      },
    );

/** Faults of the create call (`POST .../payins|payouts`). */
export const CREATE_FAULTS = [
  /** Accepts, then answers only after `slow_ms` (past the caller's timeout). */
  "answer_after_timeout",
  /** Accepts (the operation is taken), then answers 502. */
  "accept_then_5xx",
  /** Accepts, then resets the connection without an answer. */
  "accept_then_reset",
  /** Declines, after `slow_ms`. */
  "decline_after_delay",
  /** Records the request and never answers (held until the caller leaves). */
  "never_answer",
  /** Accepts and completes at once (for the full amount): the callback goes before the answer. */
  "completion_before_answer",
  /**
   * Records the request only after `slow_ms`, whether or not the caller is still there,
   * then accepts: until then its status reads `not_found` (a slow provider's queue).
   */
  "record_after_delay",
] as const;
/** Faults of a result callback, rolled when an operation is settled. */
export const CALLBACK_FAULTS = [
  /** The callback is delivered twice (same callback_id, same bytes). */
  "duplicate",
  /** The first attempt waits `slow_ms` in the retry queue instead of going at once. */
  "delayed",
  /** After a completion, a stale rejection of the same reference is delivered too. */
  "rejection_after_completion",
] as const;
/** Faults of the legs a completion reports, rolled when settled without explicit legs. */
export const SETTLEMENT_FAULTS = [
  /** Several legs that add up to the amount. */
  "split",
  /** Legs that add up to less than the amount. */
  "short",
  /** Legs that add up to more than the amount. */
  "over",
] as const;
/** Faults of the status read, rolled per read. */
export const STATUS_FAULTS = [
  /** Answers after `slow_ms`. */
  "slow",
  /** Answers 503. */
  "failing",
] as const;
/** Faults of the withdraw call, rolled per call (on top of the `withdraw` setting). */
export const WITHDRAW_FAULTS = ["failing"] as const;

export type CreateFault = (typeof CREATE_FAULTS)[number];
export type CallbackFault = (typeof CALLBACK_FAULTS)[number];
export type SettlementFault = (typeof SETTLEMENT_FAULTS)[number];
export type StatusFault = (typeof STATUS_FAULTS)[number];
export type WithdrawFault = (typeof WITHDRAW_FAULTS)[number];

/** A fault profile of one provider and direction, as the control API takes it. */
export const faultProfileSchema = z.object({
  /** The seed of every roll; the same seed repeats the same choices. */
  seed: z.string().min(1).max(128).default("sandbox"),
  /** How long "slow" faults wait (answer after timeout, decline after delay, delayed callback, slow status). */
  slow_ms: z.number().int().min(0).max(600_000).default(20_000),
  create: stage(CREATE_FAULTS).default({}),
  callback: stage(CALLBACK_FAULTS).default({}),
  settlement: stage(SETTLEMENT_FAULTS).default({}),
  status: stage(STATUS_FAULTS).default({}),
  /**
   * The status endpoint is down (503) for `for_ms` out of every `every_ms`, counted from
   * the Unix epoch, so every replica agrees on the stretch.
   */
  status_down: z
    .object({ every_ms: z.number().int().min(1000).max(86_400_000), for_ms: z.number().int().min(0) })
    .optional(),
  withdraw: stage(WITHDRAW_FAULTS).default({}),
});
export type FaultProfile = z.infer<typeof faultProfileSchema>;

/** Every fault kind with its stage, as the books count them (`create.accept_then_5xx`). */
export type FaultKind =
  | `create.${CreateFault}`
  | `callback.${CallbackFault}`
  | `settlement.${SettlementFault}`
  | `status.${StatusFault | "down"}`
  | `withdraw.${WithdrawFault}`;

/** A number in [0, 1) derived from the parts only: the seeded roll. */
export function roll(...parts: (string | number)[]): number {
  const digest = createHash("sha256").update(parts.join("\u0000")).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** Picks at most one fault of a stage's table with one roll. */
export function pick<K extends string>(
  table: Partial<Record<K, number>>,
  kinds: readonly K[],
  r: number,
): K | undefined {
  let edge = 0;
  for (const kind of kinds) {
    edge += table[kind] ?? 0;
    if (r < edge) return kind;
  }
  return undefined;
}

/** The seeded roll key of one provider, direction and reference. */
export interface RollKey {
  provider: string;
  direction: string;
  reference: string;
}

/** The stage's fault for one reference (the same on every repeat), or none. */
export function faultFor<K extends string>(
  profile: FaultProfile | undefined,
  stageName: "create" | "callback" | "settlement",
  kinds: readonly K[],
  key: RollKey,
): K | undefined {
  if (!profile) return undefined;
  const table = profile[stageName] as Partial<Record<K, number>>;
  return pick(table, kinds, roll(profile.seed, key.provider, key.direction, key.reference, stageName));
}

/**
 * The status read's fault: `down` inside a down stretch, else a per-read roll (`n` is the
 * read's number for this reference in this process, so reads of one reference differ).
 */
export function statusFault(
  profile: FaultProfile | undefined,
  key: RollKey,
  n: number,
  now: number,
): StatusFault | "down" | undefined {
  if (!profile) return undefined;
  const down = profile.status_down;
  if (down && now % down.every_ms < down.for_ms) return "down";
  return pick(
    profile.status,
    STATUS_FAULTS,
    roll(profile.seed, key.provider, key.direction, key.reference, "status", n),
  );
}

/** The withdraw call's fault, rolled per call like the status read. */
export function withdrawFault(profile: FaultProfile | undefined, key: RollKey, n: number) {
  if (!profile) return undefined;
  return pick(
    profile.withdraw,
    WITHDRAW_FAULTS,
    roll(profile.seed, key.provider, key.direction, key.reference, "withdraw", n),
  );
}

/**
 * The legs a completion reports for `amount` (in kopecks), under a settlement fault:
 * one leg without a fault; `split` into two or three legs that add up; `short` 1-10 %
 * under; `over` 1-10 % above. Whole kopecks always; never a leg of zero.
 */
export function faultyLegs(amount: bigint, fault: SettlementFault | undefined, r: number): bigint[] {
  const percent = BigInt(1 + Math.floor(r * 10));
  const delta = (amount * percent) / 100n > 0n ? (amount * percent) / 100n : 1n;
  if (fault === "short") return amount - delta > 0n ? [amount - delta] : [amount];
  if (fault === "over") return [amount + delta];
  if (fault === "split" && amount >= 3n) {
    const first = (amount * BigInt(20 + Math.floor(r * 60))) / 100n || 1n;
    const rest = amount - first;
    if (r < 0.5 || rest < 2n) return [first, rest];
    const second = rest / 2n;
    return [first, second, rest - second];
  }
  return [amount];
}

/** In-process counters of reads per reference, so per-read rolls differ and still repeat. */
export class ReadCounter {
  readonly #counts = new Map<string, number>();

  next(key: string): number {
    const n = (this.#counts.get(key) ?? 0) + 1;
    // Bounded: the oldest keys go first once the map is large (a long run reads many references).
    if (this.#counts.size > 100_000) this.#counts.delete(this.#counts.keys().next().value as string);
    this.#counts.set(key, n);
    return n;
  }
}
