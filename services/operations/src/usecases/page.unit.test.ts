import { describe, expect, it } from "vitest";
import { pageOutcome } from "./page.ts";

// What the hosted page shows the payer for each state of the payment.

describe("pageOutcome", () => {
  const at = (iso: string) => new Date(iso);
  it("reads a rejection at or after the expiry as expired, and before it as declined", () => {
    const expires = at("2026-01-01T10:00:00Z");
    expect(
      pageOutcome({ status: "rejected", expires_at: expires, updated_at: at("2026-01-01T10:00:05Z") }),
    ).toBe("expired");
    expect(
      pageOutcome({ status: "rejected", expires_at: expires, updated_at: at("2026-01-01T09:00:00Z") }),
    ).toBe("declined");
    expect(pageOutcome({ status: "rejected", expires_at: null, updated_at: expires })).toBe("declined");
  });

  it("names the waiting states and the other outcomes", () => {
    const row = { expires_at: null, updated_at: new Date() };
    expect(pageOutcome({ ...row, status: "pending" })).toBe("awaiting_payment");
    expect(pageOutcome({ ...row, status: "awaiting_confirmation" })).toBe("awaiting_receipt");
    expect(pageOutcome({ ...row, status: "manual_check" })).toBe("under_review");
    expect(pageOutcome({ ...row, status: "completed" })).toBe("paid");
    expect(pageOutcome({ ...row, status: "cancelled" })).toBe("declined");
  });
});
