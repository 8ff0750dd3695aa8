import type { OperationRow } from "./model.ts";

/**
 * A create's claim decision, as a pure function of what its load found under the key
 * (shop, merchant_operation_id): no I/O, no clock. The create (`steps/create.ts`,
 * `claimAndRoute`) loads, asks `decideClaim`, performs the action it answers, and, when
 * the action read the key again (a wait, a lost race), asks again with what it read.
 *
 * The rules (docs/architecture.md, "Create", steps 1 to 3):
 * - No row: the key is this request's (`route_new`, or `route_claimed` when the cached
 *   claim already wrote it), unless a flexible link holds it or no route is configured.
 * - A row with this request's body: its answer (`replay`), once it has one; a `routing`
 *   row is waited for, or taken over once its driver is gone; a refused create routes
 *   again (`retry_refused`), since a refusal is no decision.
 * - A row with another body: the spec's 412 (`conflict`). A row with no body is a cancel
 *   that arrived first (`adopt_cancelled`).
 */

/** A row's fields the decision reads. */
export type SeenRow = Pick<OperationRow, "request_hash" | "status" | "provider">;

/** What the create's load (or a later read of the key) found. */
export type ClaimFound =
  /** The cached claim (`OperationStore.claim`) inserted the row: the key is this request's. */
  | { kind: "claimed" }
  /**
   * The cached claim inserted nothing and saw no row: a flexible link holds the key, the
   * routing configuration changed since the route was cached (`configStale`), or another
   * request claimed the key after the claim's snapshot.
   */
  | { kind: "unclaimed"; linkHoldsKey: boolean; configStale: boolean }
  /**
   * The read (`OperationStore.createContext`) saw no row under the key; and whether the
   * route it read can take the create (`isRouteConfigured`).
   */
  | { kind: "free"; linkHoldsKey: boolean; routeConfigured: true }
  | { kind: "free"; linkHoldsKey: boolean; routeConfigured: false }
  /** The key's row was read again after a lost claim, and none was there. */
  | { kind: "gone" }
  | {
      kind: "row";
      /** The key's row, as last read. */
      row: SeenRow;
      /**
       * A create no provider accepted, that a retry may route again: `rejected` with no
       * provider, with this request's body, and no flexible link's payment (the loader
       * asks the store only then).
       */
      refusedCreate: boolean;
      /**
       * The row is `routing`, and its take-over was just refused: by the database's clock
       * its driver's deadline (plus the grace) has not passed, or another driver took it.
       */
      takeOverRefused: boolean;
    };

/** Everything the decision reads. */
export interface ClaimFacts<F extends ClaimFound = ClaimFound> {
  /** This request's body hash (`requestHash`). */
  requestHash: string;
  type: "payment" | "payout";
  /** The create of a flexible link's own payment, which may use the key its link holds. */
  forLink: boolean;
  found: F;
  /** Whether this request saw another one's attempt running: its refusal is then our answer. */
  waited: boolean;
  /** What is left of the create's budget; below 0 (or `aborted`) this request has no time left. */
  timeLeftMs: number;
  aborted: boolean;
}

type Found<F, K extends ClaimFound["kind"]> = Extract<F, { kind: K }>;
type Routable<F> = Extract<F, { kind: "free"; routeConfigured: true }>;

/** What the create does next; an action about a row carries what was found. */
export type ClaimAction<F extends ClaimFound = ClaimFound> =
  /** Route the row the cached claim wrote. */
  | { kind: "route_claimed"; found: Found<F, "claimed"> }
  /** Quote, claim the key (insert in `routing`), route. */
  | { kind: "route_new"; found: Routable<F> }
  /** The cached claim could not tell (the configuration changed): read everything (`createContext`). */
  | { kind: "read_context" }
  /** Another request (or a cancel) claimed the key after our read: read its row, and answer as it does. */
  | { kind: "read_winner" }
  /** The key was taken and its row is not there: 503, retry. */
  | { kind: "raced" }
  /** The spec's 412: the key was used with another body (or a flexible link holds it). */
  | { kind: "conflict" }
  | { kind: "route_not_configured" }
  /** 503: the row is still routing under a live driver, and this request has no time left. */
  | { kind: "unresolved" }
  /** The refusal is answered (no provider accepted). */
  | { kind: "not_accepted" }
  | {
      kind:
        | "replay"
        /** A cancel arrived first: this create completes as the cancelled payment. */
        | "adopt_cancelled"
        /** Try to take the routing over (the database's clock decides whether the driver is gone). */
        | "take_over"
        /** Wait a little, read the row again. */
        | "wait"
        /** Route the refused create again, under the same operation id. */
        | "retry_refused";
      found: Found<F, "row">;
    };

/** Every kind of action, for tests. */
export const CLAIM_ACTIONS = [
  "route_claimed",
  "route_new",
  "read_context",
  "read_winner",
  "raced",
  "conflict",
  "route_not_configured",
  "unresolved",
  "not_accepted",
  "replay",
  "adopt_cancelled",
  "take_over",
  "wait",
  "retry_refused",
] as const satisfies readonly ClaimAction["kind"][];

/**
 * The next action of a create, from what it found. Each action about a row carries the
 * very `found` it was given (typed as the caller's), so the caller acts on what it loaded.
 */
export function decideClaim<F extends ClaimFound>(facts: ClaimFacts<F>): ClaimAction<F> {
  // Sound: every action carries `facts.found` itself, narrowed by its `kind`.
  return decide(facts) as unknown as ClaimAction<F>;
}

function decide(facts: ClaimFacts): ClaimAction {
  const { found } = facts;
  // A flexible link holds its key (in amount_selection there is no operation row yet):
  // another request under it is another body for the same key (the spec's 412), except
  // for the link's own payment.
  const linkConflict = (linkHoldsKey: boolean) => linkHoldsKey && !facts.forLink;
  switch (found.kind) {
    case "claimed":
      return { kind: "route_claimed", found };
    case "unclaimed":
      if (linkConflict(found.linkHoldsKey)) return { kind: "conflict" };
      // A configuration changed since the route was cached: the read routes by the new one.
      // Otherwise none of claimed, existing and stale is another request's claim after the
      // claim's snapshot: read it.
      return { kind: found.configStale ? "read_context" : "read_winner" };
    case "free":
      if (linkConflict(found.linkHoldsKey)) return { kind: "conflict" };
      if (!found.routeConfigured) return { kind: "route_not_configured" };
      return { kind: "route_new", found };
    case "gone":
      return { kind: "raced" };
    case "row":
      return decideRow(facts, found);
  }
}

/** A request whose key already has a row: replay, conflict, wait, take over, or a refusal routed again. */
function decideRow(facts: ClaimFacts, found: Found<ClaimFound, "row">): ClaimAction {
  const { row } = found;
  const outOfTime = facts.timeLeftMs < 0 || facts.aborted;
  if (row.request_hash === null)
    // A cancel arrived first: this create completes as a cancelled payment (spec rule 5).
    return facts.type === "payment" ? { kind: "adopt_cancelled", found } : { kind: "conflict" };
  if (row.request_hash !== facts.requestHash) return { kind: "conflict" };
  if (row.status === "routing") {
    // The driver that claimed the key is gone (it died, or answered 503 with a provider's
    // answer unresolved) once the database's clock passed its deadline plus a grace for a
    // slow final write: this request takes the routing over and goes on from the stored
    // cascade position (providers are idempotent on our operation id). So each time the
    // row is seen routing, the take-over is tried first; refused, the request waits for
    // the driver's answer while it has time.
    if (!found.takeOverRefused) return { kind: "take_over", found };
    return outOfTime ? { kind: "unresolved" } : { kind: "wait", found };
  }
  if (row.status !== "rejected" || row.provider !== null) return { kind: "replay", found };
  // A refusal is no decision (the spec's 503): the same command routes again, unless this
  // request has just watched another attempt end so, or has no time left, or it is a
  // flexible link's payment (whose refusal is answered again).
  if (facts.waited || outOfTime || !found.refusedCreate) return { kind: "not_accepted" };
  return { kind: "retry_refused", found };
}

/** Whether a route can take a create: configured, and naming a provider for the direction. */
export const isRouteConfigured = <R extends { names: readonly string[] }>(
  routing: R | undefined,
): routing is R => routing !== undefined && routing.names.length > 0;
