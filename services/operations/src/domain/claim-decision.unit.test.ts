import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CLAIM_ACTIONS,
  type ClaimFacts,
  type ClaimFound,
  decideClaim,
  isRouteConfigured,
  type SeenRow,
} from "./claim-decision.ts";
import type { Status } from "./model.ts";

// The claim decision, one case per rule (in the order `decideClaim` applies them), then
// as properties: whatever the load found, the decision answers one action, and each
// action about a row carries the row it was given.

const HASH = "hash-of-this-request";

/** Facts of a payment create with time left, that never waited; `over` changes any. */
const facts = (found: ClaimFound, over: Partial<Omit<ClaimFacts, "found">> = {}): ClaimFacts => ({
  requestHash: HASH,
  type: "payment",
  forLink: false,
  found,
  waited: false,
  timeLeftMs: 1_000,
  aborted: false,
  ...over,
});

/** A row under the key: this request's body, `routing`, no provider. */
const row = (
  over: Partial<SeenRow> = {},
  seen: { refusedCreate?: boolean; takeOverRefused?: boolean } = {},
): ClaimFound => ({
  kind: "row",
  row: { request_hash: HASH, status: "routing", provider: null, ...over },
  refusedCreate: seen.refusedCreate ?? false,
  takeOverRefused: seen.takeOverRefused ?? false,
});

/** A refused create of this request's body. */
const refused = (seen: { refusedCreate?: boolean } = {}) =>
  row({ status: "rejected" }, { refusedCreate: seen.refusedCreate ?? true });

const kindOf = (f: ClaimFacts) => decideClaim(f).kind;

describe("the claim decision", () => {
  describe("no row under the key", () => {
    it("routes the row the cached claim wrote", () => {
      expect(kindOf(facts({ kind: "claimed" }))).toBe("route_claimed");
    });

    it("answers 412 when the cached claim found a flexible link holding the key", () => {
      expect(kindOf(facts({ kind: "unclaimed", linkHoldsKey: true, configStale: false }))).toBe("conflict");
      expect(kindOf(facts({ kind: "unclaimed", linkHoldsKey: true, configStale: true }))).toBe("conflict");
    });

    it("lets the link's own payment past the key its link holds", () => {
      const found: ClaimFound = { kind: "unclaimed", linkHoldsKey: true, configStale: false };
      expect(kindOf(facts(found, { forLink: true }))).toBe("read_winner");
    });

    it("reads everything when the routing configuration changed since the route was cached", () => {
      expect(kindOf(facts({ kind: "unclaimed", linkHoldsKey: false, configStale: true }))).toBe(
        "read_context",
      );
    });

    it("reads the row of a request that claimed the key after the cached claim's snapshot", () => {
      expect(kindOf(facts({ kind: "unclaimed", linkHoldsKey: false, configStale: false }))).toBe(
        "read_winner",
      );
    });

    it("answers 412 when the read found a flexible link holding the key", () => {
      expect(kindOf(facts({ kind: "free", linkHoldsKey: true, routeConfigured: true }))).toBe("conflict");
      expect(kindOf(facts({ kind: "free", linkHoldsKey: true, routeConfigured: false }))).toBe("conflict");
    });

    it("refuses a create whose route is not configured", () => {
      expect(kindOf(facts({ kind: "free", linkHoldsKey: false, routeConfigured: false }))).toBe(
        "route_not_configured",
      );
    });

    it("claims a free key and routes it", () => {
      expect(kindOf(facts({ kind: "free", linkHoldsKey: false, routeConfigured: true }))).toBe("route_new");
      expect(
        kindOf(facts({ kind: "free", linkHoldsKey: true, routeConfigured: true }, { forLink: true })),
      ).toBe("route_new");
    });

    it("answers 503 when the key was taken and its row is not there", () => {
      expect(kindOf(facts({ kind: "gone" }))).toBe("raced");
    });
  });

  describe("a row under the key", () => {
    it("adopts a cancel that arrived first, for a payment", () => {
      expect(kindOf(facts(row({ request_hash: null, status: "cancelled" })))).toBe("adopt_cancelled");
    });

    it("answers 412 to a payout whose key a cancel holds", () => {
      expect(kindOf(facts(row({ request_hash: null, status: "cancelled" }), { type: "payout" }))).toBe(
        "conflict",
      );
    });

    it("answers 412 to another body", () => {
      for (const status of ["routing", "pending", "completed", "rejected"] as const)
        expect(kindOf(facts(row({ request_hash: "another", status }, { refusedCreate: true })))).toBe(
          "conflict",
        );
    });

    it("tries to take a routing row over first, whatever the time left", () => {
      expect(kindOf(facts(row()))).toBe("take_over");
      expect(kindOf(facts(row(), { timeLeftMs: -1, aborted: true, waited: true }))).toBe("take_over");
    });

    it("waits for a live driver while it has time", () => {
      expect(kindOf(facts(row({}, { takeOverRefused: true })))).toBe("wait");
      // The deadline is passed only once the clock is beyond it.
      expect(kindOf(facts(row({}, { takeOverRefused: true }), { timeLeftMs: 0 }))).toBe("wait");
    });

    it("answers 503 when a live driver still routes and the time is up", () => {
      expect(kindOf(facts(row({}, { takeOverRefused: true }), { timeLeftMs: -1 }))).toBe("unresolved");
      expect(kindOf(facts(row({}, { takeOverRefused: true }), { aborted: true }))).toBe("unresolved");
    });

    it("replays a row with an answer", () => {
      for (const status of [
        "pending",
        "awaiting_confirmation",
        "manual_check",
        "completed",
        "cancelled",
      ] as const)
        expect(kindOf(facts(row({ status }), { waited: true, timeLeftMs: -1 }))).toBe("replay");
      // Rejected by a provider: an answer, not a refusal.
      expect(kindOf(facts(row({ status: "rejected", provider: "p1" })))).toBe("replay");
    });

    it("answers the refusal it watched another attempt end with", () => {
      expect(kindOf(facts(refused(), { waited: true }))).toBe("not_accepted");
    });

    it("answers a refusal when it has no time left", () => {
      expect(kindOf(facts(refused(), { timeLeftMs: -1 }))).toBe("not_accepted");
      expect(kindOf(facts(refused(), { aborted: true }))).toBe("not_accepted");
    });

    it("answers again the refusal of a flexible link's payment", () => {
      expect(kindOf(facts(refused({ refusedCreate: false })))).toBe("not_accepted");
    });

    it("routes a refused create again", () => {
      expect(kindOf(facts(refused()))).toBe("retry_refused");
      expect(kindOf(facts(refused(), { type: "payout", timeLeftMs: 0 }))).toBe("retry_refused");
    });
  });

  describe("its helpers", () => {
    it("tells a route that can take a create", () => {
      expect(isRouteConfigured(undefined)).toBe(false);
      expect(isRouteConfigured({ names: [] })).toBe(false);
      expect(isRouteConfigured({ names: ["p1"] })).toBe(true);
    });
  });
});

const STATUSES: Status[] = [
  "routing",
  "pending",
  "awaiting_confirmation",
  "manual_check",
  "completed",
  "cancelled",
  "rejected",
];

const anyFound: fc.Arbitrary<ClaimFound> = fc.oneof(
  fc.constant({ kind: "claimed" as const }),
  fc.record({
    kind: fc.constant("unclaimed" as const),
    linkHoldsKey: fc.boolean(),
    configStale: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("free" as const),
    linkHoldsKey: fc.boolean(),
    routeConfigured: fc.boolean(),
  }),
  fc.constant({ kind: "gone" as const }),
  fc.record({
    kind: fc.constant("row" as const),
    row: fc.record({
      request_hash: fc.constantFrom(HASH, "another", null),
      status: fc.constantFrom(...STATUSES),
      provider: fc.constantFrom(null, "p1"),
    }),
    refusedCreate: fc.boolean(),
    takeOverRefused: fc.boolean(),
  }),
) as fc.Arbitrary<ClaimFound>;

const anyFacts: fc.Arbitrary<ClaimFacts> = fc.record({
  requestHash: fc.constant(HASH),
  type: fc.constantFrom("payment" as const, "payout" as const),
  forLink: fc.boolean(),
  found: anyFound,
  waited: fc.boolean(),
  timeLeftMs: fc.integer({ min: -2, max: 2 }),
  aborted: fc.boolean(),
});

describe("the claim decision, as properties", () => {
  it("is total: whatever was found, one known action, the same each time", () => {
    fc.assert(
      fc.property(anyFacts, (f) => {
        const action = decideClaim(f);
        expect(CLAIM_ACTIONS).toContain(action.kind);
        expect(decideClaim(f)).toEqual(action);
      }),
      { numRuns: 2_000 },
    );
  });

  it("acts on the very row (or claim) it was given", () => {
    fc.assert(
      fc.property(anyFacts, (f) => {
        const action = decideClaim(f);
        if ("found" in action) expect(action.found).toBe(f.found);
      }),
    );
  });

  it("routes only a key with no row, and answers a row only for this body or a cancel's placeholder", () => {
    fc.assert(
      fc.property(anyFacts, (f) => {
        const kind = decideClaim(f).kind;
        if (kind === "route_claimed" || kind === "route_new") expect(f.found.kind).not.toBe("row");
        if (f.found.kind === "row" && f.found.row.request_hash === "another") expect(kind).toBe("conflict");
      }),
    );
  });

  it("never waits without time, and never routes a refusal again after watching one", () => {
    fc.assert(
      fc.property(anyFacts, (f) => {
        const kind = decideClaim(f).kind;
        if (kind === "wait") expect(f.timeLeftMs >= 0 && !f.aborted).toBe(true);
        if (kind === "retry_refused") expect(f.waited || f.aborted || f.timeLeftMs < 0).toBe(false);
      }),
    );
  });

  it("answers every combination of facts, and each action is reached by one", () => {
    // The domain is finite: every found, every flag, a time left below, at and above 0.
    const founds: ClaimFound[] = [{ kind: "claimed" }, { kind: "gone" }];
    for (const linkHoldsKey of [false, true]) {
      for (const configStale of [false, true]) founds.push({ kind: "unclaimed", linkHoldsKey, configStale });
      for (const routeConfigured of [false, true])
        founds.push({ kind: "free", linkHoldsKey, routeConfigured } as ClaimFound);
    }
    for (const request_hash of [HASH, "another", null])
      for (const status of STATUSES)
        for (const provider of [null, "p1"])
          for (const refusedCreate of [false, true])
            for (const takeOverRefused of [false, true])
              founds.push({
                kind: "row",
                row: { request_hash, status, provider },
                refusedCreate,
                takeOverRefused,
              });
    const reached = new Set<string>();
    let count = 0;
    for (const found of founds)
      for (const type of ["payment", "payout"] as const)
        for (const forLink of [false, true])
          for (const waited of [false, true])
            for (const timeLeftMs of [-1, 0, 1])
              for (const aborted of [false, true]) {
                const kind = kindOf({ requestHash: HASH, type, forLink, found, waited, timeLeftMs, aborted });
                expect(CLAIM_ACTIONS).toContain(kind);
                reached.add(kind);
                count++;
              }
    expect(count).toBe(founds.length * 48);
    expect([...reached].sort()).toEqual([...CLAIM_ACTIONS].sort());
  });
});
