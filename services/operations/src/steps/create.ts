import { setTimeout as sleep } from "node:timers/promises";
import { decideClaim } from "../domain/claim-decision.ts";
import {
  type CreateInput,
  conflict,
  requestColumns,
  requestHash,
  routeNotConfigured,
} from "../domain/create-request.ts";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import {
  adoptCancelled,
  type Create,
  claimFresh,
  type Loaded,
  loadClaim,
  readKey,
  retryRefused,
} from "./claim.ts";
import type { CreateDeps, CreateResult } from "./create-deps.ts";
import { notAccepted, unresolved } from "./record.ts";
import { drive, ROUTING_GRACE_MS } from "./resume.ts";
import { route } from "./routing.ts";

export type { CreateDeps, CreateResult } from "./create-deps.ts";

/**
 * Creates a payment or payout: idempotent claim, route, quote, providers in order within
 * one budget, then one statement that records the outcome with its event. A create that
 * no provider accepted is recorded as rejected (no event) and answered with an error, never
 * as a synthetic pending; a retry with the same body routes again (`retryRefused`).
 *
 * It reads top to bottom: one load (`loadClaim`: the cached claim, else the read), the
 * claim decision (`decideClaim`, domain/claim-decision.ts), its action (the key's reads and
 * writes are steps/claim.ts's), and for a create that holds the key the cascade (`route`,
 * steps/routing.ts), which records the outcome. An action that reads the key again (a
 * wait, a lost race, a lost retry) decides again on what it read.
 */
export async function claimAndRoute(
  deps: CreateDeps,
  input: CreateInput,
  signal: AbortSignal,
  options: {
    /** The create of a flexible link's own payment, which may use the key its link holds. */
    forLink?: boolean;
  } = {},
): Promise<CreateResult> {
  const deadline = Date.now() + deps.budgetMs;
  const hash = requestHash(input);
  const c: Create = {
    input,
    hash,
    request: requestColumns(input, hash),
    direction: input.type === "payment" ? "payin" : "payout",
    forLink: options.forLink === true,
    deadline,
    signal,
    // One NATS round trip brings the route and pricing caches up to date (both subscribe on
    // the same connection); without a route cache it overlaps the read.
    barrier: deps.routes?.barrier() ?? deps.pricing?.barrier(),
  };
  // The route from the cache, once the round trip is done. None when the caches are
  // unusable (NATS down): there is no round trip to wait for, and the read path costs fewer
  // statements than a route loaded here and read again there.
  const cached = c.barrier && (await deps.routes?.get(input.shopId, input.method, c.direction, c.barrier));
  let seen: Loaded = await loadClaim(deps, c, cached);
  let waited = false;
  for (;;) {
    const action = decideClaim({
      requestHash: c.hash,
      type: input.type,
      forLink: c.forLink,
      found: seen,
      waited,
      timeLeftMs: deadline - Date.now(),
      aborted: signal.aborted,
    });
    switch (action.kind) {
      case "route_claimed": {
        const { claimed, routing } = action.found;
        // A flexible link's payment may hold the Admit its link made (`forLink`): no first attempt.
        const row = await route(
          deps,
          claimed,
          routing.providers,
          routing.names,
          deadline,
          signal,
          !c.forLink,
        );
        return { row, replayed: false };
      }
      case "route_new": {
        const claimed = await claimFresh(deps, c, action.found);
        const { routing } = action.found;
        if (claimed)
          return {
            row: await route(deps, claimed, routing.providers, routing.names, deadline, signal, !c.forLink),
            replayed: false,
          };
        seen = await readKey(deps, c);
        break;
      }
      case "read_context":
        seen = await loadClaim(deps, c, undefined);
        break;
      case "read_winner":
        seen = await readKey(deps, c);
        break;
      case "raced":
        throw new DependencyUnavailableError("create raced; retry");
      case "conflict":
        throw conflict();
      case "route_not_configured":
        throw routeNotConfigured(c.direction, input.method);
      case "adopt_cancelled":
        return { row: await adoptCancelled(deps, c, action.found.row), replayed: false };
      case "take_over": {
        const taken = await deps.store.takeOverRouting(
          action.found.row,
          Math.max(0, deadline - Date.now()),
          ROUTING_GRACE_MS,
        );
        if (taken) return { row: await drive(deps, taken, deadline, signal), replayed: false };
        seen = { ...action.found, takeOverRefused: true };
        break;
      }
      case "wait":
        waited = true;
        await sleep(50);
        seen = await readKey(deps, c, action.found.row);
        break;
      case "unresolved":
        throw unresolved();
      case "replay":
        return { row: action.found.row, replayed: true };
      case "not_accepted":
        throw notAccepted();
      case "retry_refused": {
        const retried = await retryRefused(deps, c, action.found.row);
        if (retried) return { row: retried, replayed: false };
        // Another retry (or a cancel) changed the row first: answer as it stands now.
        seen = await readKey(deps, c, action.found.row);
        break;
      }
    }
  }
}
