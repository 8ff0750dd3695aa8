import { Decimal } from "@gw/money";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Applied,
  apply,
  applyWithoutLegs,
  type Fact,
  type LifecycleOperation,
  stateOf,
} from "./apply.ts";
import {
  AlreadyTerminalError,
  ConcurrentChangeError,
  DomainError,
  LifecycleViolationError,
  NotAwaitingConfirmationError,
  NotCancellableError,
  NotRoutedError,
} from "./errors.ts";
import {
  type FACT_KINDS,
  FINAL_STATES,
  LIFECYCLE_STATES,
  type LifecycleState,
  TRANSITIONS,
} from "./table.ts";

/** An operation in `state`, as a builder: a payment of 1,000.00 routed to provider `a`. */
function operationIn(state: LifecycleState, over: Partial<LifecycleOperation> = {}): LifecycleOperation {
  const base: LifecycleOperation = {
    id: "op-1",
    type: "payment",
    status: "routing",
    provider: "a",
    request_hash: "hash",
    expected_amount: "1000.00",
    actual_amount: "0",
    cancel_requested: false,
    cancelled_by_command: false,
    manual_check_reason: null,
    review_started_at: null,
    legs: [],
  };
  const byState: Record<LifecycleState, Partial<LifecycleOperation>> = {
    routing: { status: "routing", provider: null },
    pending: { status: "pending" },
    awaiting_confirmation: { status: "awaiting_confirmation" },
    manual_check: { status: "manual_check", manual_check_reason: "potential_fake" },
    completed: { status: "completed", actual_amount: "1000.00" },
    rejected: { status: "rejected" },
    cancelled: { status: "cancelled", cancelled_by_command: true },
    refused: { status: "rejected", provider: null },
    cancel_placeholder: {
      status: "cancelled",
      request_hash: null,
      provider: null,
      cancelled_by_command: true,
    },
  };
  return { ...base, ...byState[state], ...over };
}

/** One sample fact of each kind, as the call sites build them. */
const SAMPLES: Record<(typeof FACT_KINDS)[number], Fact[]> = {
  provider_accepted: [
    { kind: "provider_accepted", provider: "a", receiptRequired: false },
    { kind: "provider_accepted", provider: "a", receiptRequired: true },
  ],
  provider_declined: [{ kind: "provider_declined", provider: "a" }],
  provider_unknown: [{ kind: "provider_unknown", provider: "a" }],
  routing_claimed: [{ kind: "routing_claimed" }],
  refused: [{ kind: "refused" }],
  cancel: [{ kind: "cancel", reason: "cancel" }],
  create_adopted: [{ kind: "create_adopted", type: "payment", requestHash: "hash" }],
  provider_completed: [
    { kind: "provider_completed", provider: "a", legs: [] },
    { kind: "provider_completed", provider: "a", legs: [{ id: "l1", amount: "400.00" }] },
  ],
  provider_rejected: [{ kind: "provider_rejected", provider: "a" }],
  receipt_reviewed: [
    { kind: "receipt_reviewed", verdict: "completed", receiptId: "r1", amount: "900.00" },
    { kind: "receipt_reviewed", verdict: "rejected", receiptId: "r1" },
    { kind: "receipt_reviewed", verdict: "manual_check", receiptId: "r1", reason: "not_terminal" },
  ],
  operator_reviewed: [
    { kind: "operator_reviewed", verdict: "completed", receiptId: "r1", amount: "150.00" },
    { kind: "operator_reviewed", verdict: "rejected", receiptId: "r1" },
  ],
  review_started: [{ kind: "review_started", at: new Date(0) }],
  review_abandoned: [{ kind: "review_abandoned" }],
  expired: [{ kind: "expired" }],
  refusal_retried: [{ kind: "refusal_retried" }],
  refusal_announced: [{ kind: "refusal_announced" }],
  handed_off: [
    { kind: "handed_off", provider: "b", from: "a", contributions: [{ id: "c1", amount: "300.00" }] },
  ],
};

const key = (from: string, fact: string, to: string) => `${from} --${fact}--> ${to}`;

function changed(result: Applied | DomainError): Applied {
  if (result instanceof DomainError) throw result;
  return result;
}

describe("the lifecycle table", () => {
  it("lands every fact in every state on a row of the table, or refuses it with a domain error", () => {
    const reached = new Set<string>();
    const allowed = new Set(TRANSITIONS.map((r) => key(r.from, r.fact, r.to)));
    for (const state of LIFECYCLE_STATES)
      for (const type of ["payment", "payout"] as const)
        for (const legs of [[], [{ id: "pool", amount: "200.00" }]])
          for (const cancelRequested of [false, true])
            for (const facts of Object.values(SAMPLES))
              for (const fact of facts) {
                const op = operationIn(state, { type, legs, cancel_requested: cancelRequested });
                const result = apply(op, fact);
                if (result instanceof DomainError) continue;
                const to = result.change?.to ?? stateOf(op);
                expect(allowed, key(state, fact.kind, to)).toContain(key(state, fact.kind, to));
                reached.add(key(state, fact.kind, to));
              }
    // Every row of the table is a real outcome, not dead text.
    expect([...reached].sort()).toEqual([...allowed].sort());
  });

  it("refuses every fact once an operation is completed, rejected or cancelled", () => {
    for (const state of FINAL_STATES)
      for (const facts of Object.values(SAMPLES))
        for (const fact of facts) expect(apply(operationIn(state), fact)).toBeInstanceOf(DomainError);
  });

  it("announces what each transition emits as <type>.<stored status>", () => {
    const accepted = changed(
      apply(operationIn("routing"), { kind: "provider_accepted", provider: "a", receiptRequired: true }),
    );
    expect(accepted.events).toEqual(["payment.awaiting_confirmation"]);
    expect(accepted.change?.patch).toMatchObject({ status: "awaiting_confirmation", provider: "a" });
    const payout = changed(
      apply(operationIn("routing", { type: "payout" }), {
        kind: "provider_accepted",
        provider: "a",
        receiptRequired: true,
      }),
    );
    expect(payout.events).toEqual(["payout.pending"]);
  });

  it("records a cancel during routing without an event, and the end of routing then cancels", () => {
    const cancel = changed(apply(operationIn("routing"), { kind: "cancel", reason: "shop said so" }));
    expect(cancel).toMatchObject({
      events: [],
      change: { to: "routing", patch: { cancel_requested: true } },
    });
    const ended = changed(apply(operationIn("routing", { cancel_requested: true }), { kind: "refused" }));
    expect(ended).toMatchObject({ events: ["payment.cancelled"], change: { to: "cancelled" } });
  });

  it("keeps a refusal unannounced, and lets a retry route it again", () => {
    const refused = changed(apply(operationIn("routing"), { kind: "refused" }));
    expect(refused).toMatchObject({ events: [], change: { to: "refused", patch: { status: "rejected" } } });
    const retried = changed(apply(operationIn("refused"), { kind: "refusal_retried" }));
    expect(retried).toMatchObject({ events: [], change: { to: "routing", patch: { status: "routing" } } });
  });

  it("refuses to cancel a payout or a payment in manual_check", () => {
    expect(apply(operationIn("pending", { type: "payout" }), { kind: "cancel", reason: "x" })).toBeInstanceOf(
      NotCancellableError,
    );
    expect(apply(operationIn("manual_check"), { kind: "cancel", reason: "x" })).toBeInstanceOf(
      NotCancellableError,
    );
    expect(apply(operationIn("completed"), { kind: "cancel", reason: "x" })).toBeInstanceOf(
      AlreadyTerminalError,
    );
  });

  it("refuses a provider result from a provider that does not hold the operation", () => {
    expect(
      apply(operationIn("pending"), { kind: "provider_completed", provider: "b", legs: [] }),
    ).toBeInstanceOf(NotRoutedError);
  });

  it("completes with the legs' sum when legs are reported, and with the expected amount when none are", () => {
    const withLegs = changed(
      apply(operationIn("pending", { legs: [{ id: "pool", amount: "200.00" }] }), {
        kind: "provider_completed",
        provider: "a",
        legs: [{ id: "l1", amount: "700.00" }],
      }),
    );
    expect(withLegs.change?.patch.actual_amount).toBe("900.00");
    const without = changed(
      apply(operationIn("pending"), { kind: "provider_completed", provider: "a", legs: [] }),
    );
    expect(without.change?.patch.actual_amount).toBe("1000.00");
  });

  it("ends a pool payout the provider rejects with what the pool paid, not rejected", () => {
    const op = operationIn("pending", { type: "payout", legs: [{ id: "pool", amount: "250.00" }] });
    const result = changed(apply(op, { kind: "provider_rejected", provider: "a" }));
    expect(result).toMatchObject({
      events: ["payout.completed"],
      change: { patch: { actual_amount: "250.00" } },
    });
  });

  it("writes nothing when a review repeats the manual_check reason the payment already has", () => {
    const op = operationIn("manual_check", { manual_check_reason: "not_terminal" });
    const same = changed(
      apply(op, {
        kind: "receipt_reviewed",
        verdict: "manual_check",
        receiptId: "r",
        reason: "not_terminal",
      }),
    );
    expect(same).toEqual({ change: null, events: [] });
  });

  it("takes no receipt verdict for a pending payment, and expires nothing under review", () => {
    expect(
      apply(operationIn("pending"), { kind: "receipt_reviewed", verdict: "rejected", receiptId: "r" }),
    ).toBeInstanceOf(NotAwaitingConfirmationError);
    expect(apply(operationIn("manual_check"), { kind: "expired" })).toBeInstanceOf(LifecycleViolationError);
  });

  it("does not expire a payment whose receipt is under review until its verdict (or the end of the review) clears it", () => {
    const reviewing = operationIn("awaiting_confirmation", { review_started_at: new Date(0) });
    expect(apply(reviewing, { kind: "expired" })).toBeInstanceOf(ConcurrentChangeError);
    expect(
      changed(apply(operationIn("awaiting_confirmation"), { kind: "review_started", at: new Date(0) }))
        .change,
    ).toMatchObject({ to: "awaiting_confirmation", patch: { review_started_at: new Date(0) } });
    for (const verdict of ["completed", "rejected", "manual_check"] as const)
      expect(
        changed(apply(reviewing, { kind: "receipt_reviewed", verdict, receiptId: "r", amount: "1000.00" }))
          .change?.patch,
      ).toMatchObject({ review_started_at: null });
    const abandoned = changed(apply(reviewing, { kind: "review_abandoned" }));
    expect(abandoned).toMatchObject({ change: { patch: { review_started_at: null } }, events: [] });
    expect(changed(apply({ ...reviewing, review_started_at: null }, { kind: "expired" })).events).toEqual([
      "payment.rejected",
    ]);
  });
});

const cents = fc.integer({ min: 1, max: 50_000 }).map((c) => new Decimal(c).div(100).toFixed(2));
const provider = fc.constantFrom("a", "self_matching");
const leg = fc.record({ id: fc.constantFrom("l1", "l2", "l3", "l4"), amount: cents });
const verdict = fc.record({
  verdict: fc.constantFrom("completed" as const, "rejected" as const, "manual_check" as const),
  receiptId: fc.constantFrom("r1", "r2"),
  amount: cents,
  reason: fc.constantFrom("potential_fake" as const, "not_terminal" as const),
});
const fact: fc.Arbitrary<Fact> = fc.oneof(
  fc.record({ kind: fc.constant("provider_accepted" as const), provider, receiptRequired: fc.boolean() }),
  fc.record({ kind: fc.constant("provider_declined" as const), provider }),
  fc.record({ kind: fc.constant("provider_unknown" as const), provider }),
  fc.constant({ kind: "routing_claimed" as const }),
  fc.constant({ kind: "refused" as const }),
  fc.record({ kind: fc.constant("cancel" as const), reason: fc.constant("cancel") }),
  fc.record({
    kind: fc.constant("create_adopted" as const),
    type: fc.constantFrom("payment" as const, "payout" as const),
    requestHash: fc.constant("h"),
  }),
  fc.record({
    kind: fc.constant("provider_completed" as const),
    provider,
    legs: fc.array(leg, { maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant("provider_rejected" as const), provider }),
  verdict.map((v) => ({ kind: "receipt_reviewed" as const, ...v })),
  verdict.map((v) => ({ kind: "operator_reviewed" as const, ...v })),
  fc.constant({ kind: "review_started" as const, at: new Date(0) }),
  fc.constant({ kind: "review_abandoned" as const }),
  fc.constant({ kind: "expired" as const }),
  fc.constant({ kind: "refusal_retried" as const }),
  fc.constant({ kind: "refusal_announced" as const }),
  fc.record({
    kind: fc.constant("handed_off" as const),
    provider,
    from: provider,
    contributions: fc.array(fc.record({ id: fc.constantFrom("c1", "c2"), amount: cents }), { maxLength: 2 }),
  }),
);
const start = fc.record({
  type: fc.constantFrom("payment" as const, "payout" as const),
  placeholder: fc.boolean(),
});

describe("a fact applied without the legs", () => {
  it("answers as with any legs, or not at all when its decision looked at them", () => {
    const someLegs = [{ id: "l0", amount: "250.00" }];
    let answered = 0;
    let declined = 0;
    for (const state of LIFECYCLE_STATES)
      for (const type of ["payment", "payout"] as const)
        for (const f of Object.values(SAMPLES).flat()) {
          const { legs: _, ...row } = operationIn(state, { type });
          const blind = applyWithoutLegs(row, f);
          if (blind === undefined) {
            declined++;
            continue;
          }
          answered++;
          for (const legs of [[], someLegs]) expect(blind).toEqual(apply({ ...row, legs }, f));
        }
    // Both answers occur: acceptances and cancels go without legs, completions do not.
    expect(answered).toBeGreaterThan(0);
    expect(declined).toBeGreaterThan(0);
    expect(applyWithoutLegs(operationIn("pending"), SAMPLES.provider_completed[1] as Fact)).toBeUndefined();
    expect(applyWithoutLegs(operationIn("routing"), SAMPLES.provider_accepted[0] as Fact)).toMatchObject({
      change: { to: "pending" },
    });
  });
});

describe("the lifecycle under random sequences of facts", () => {
  it("never leaves the table, never changes a final operation, and keeps the amount agreeing with the legs", () => {
    const allowed = new Set(TRANSITIONS.map((r) => key(r.from, r.fact, r.to)));
    fc.assert(
      fc.property(start, fc.array(fact, { maxLength: 20 }), (s, facts) => {
        let op = operationIn(s.placeholder ? "cancel_placeholder" : "routing", {
          type: s.type,
          expected_amount: "1000.00",
        });
        let lastReported = false;
        for (const f of facts) {
          const before = stateOf(op);
          const result = apply(op, f);
          if (result instanceof DomainError) continue;
          if (!result.change) continue;
          const { change, events } = result;
          expect(allowed).toContain(key(change.from, change.fact, change.to));
          // Nothing moves a final state; the internal states (refusal, placeholder) leave
          // only through the corrections the table names.
          expect(FINAL_STATES.has(before)).toBe(false);
          op = { ...op, ...change.patch, legs: [...op.legs, ...change.legs] };
          expect(stateOf(op)).toBe(change.to);
          for (const e of events) expect(e).toBe(`${op.type}.${op.status}`);
          if (change.to === "completed")
            lastReported =
              (f.kind === "provider_completed" && f.legs.length > 0) ||
              f.kind === "provider_rejected" ||
              f.kind === "receipt_reviewed" ||
              f.kind === "operator_reviewed";
          // Money: nothing is actual before completion; at completion the legs never claim
          // more than the actual amount, and match it exactly when the fact reported them.
          const legs = op.legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
          const actual = new Decimal(op.actual_amount);
          if (op.status !== "completed") expect(actual.isZero()).toBe(true);
          else if (lastReported) expect(actual.eq(legs)).toBe(true);
          else expect(actual.gte(legs)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
