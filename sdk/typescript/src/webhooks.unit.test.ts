import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { isEventOf, WebhookRejectedError, WebhookVerifier } from "./webhooks.ts";

const secret = `whsec_${randomBytes(32).toString("base64")}`;
const signer = new Webhook(secret);
const event = {
  id: "evt-0191a5e4",
  type: "payment.completed",
  created_at: "2026-11-21T10:00:00.000Z",
  data: {
    operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
    status: "completed",
    actual_amount: "1000.00",
  },
};

/** A delivery as the gateway sends it: the body and its three Standard Webhooks headers. */
function delivery(body: object = event, at = new Date(), id = event.id) {
  const payload = JSON.stringify(body);
  return {
    payload,
    headers: {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signer.sign(id, at, payload),
    },
  };
}

describe("WebhookVerifier", () => {
  it("verifies a signed delivery and parses it into a typed event", () => {
    const { payload, headers } = delivery();
    const verified = new WebhookVerifier(secret).verify(payload, headers);
    expect(verified).toEqual(event);
    expect(isEventOf(verified, "payment.completed")).toBe(true);
    expect(isEventOf(verified, "payout.completed")).toBe(false);
  });

  it("takes the body as bytes and the headers as a Fetch Headers object", () => {
    const { payload, headers } = delivery();
    const verified = new WebhookVerifier(secret).verify(
      new TextEncoder().encode(payload),
      new Headers(headers),
    );
    expect(verified.id).toBe(event.id);
  });

  it("refuses a body changed after signing", () => {
    const { payload, headers } = delivery();
    const tampered = payload.replace("1000.00", "9000.00");
    expect(() => new WebhookVerifier(secret).verify(tampered, headers)).toThrow(WebhookRejectedError);
  });

  it("refuses a delivery signed with another secret", () => {
    const { payload, headers } = delivery();
    const other = new WebhookVerifier(`whsec_${randomBytes(32).toString("base64")}`);
    expect(() => other.verify(payload, headers)).toThrow(WebhookRejectedError);
  });

  it("refuses a delivery whose timestamp is outside the replay window, and takes one inside it", () => {
    const now = Date.now();
    const verifier = new WebhookVerifier(secret, { toleranceSeconds: 60, now: () => now });
    const old = delivery(event, new Date(now - 61_000));
    expect(() => verifier.verify(old.payload, old.headers)).toThrow(/replay/);
    const future = delivery(event, new Date(now + 61_000));
    expect(() => verifier.verify(future.payload, future.headers)).toThrow(/replay/);
    const fresh = delivery(event, new Date(now - 59_000));
    expect(verifier.verify(fresh.payload, fresh.headers).id).toBe(event.id);
  });

  it("refuses a delivery older than five minutes even with a wider window asked for", () => {
    const old = delivery(event, new Date(Date.now() - 6 * 60_000));
    expect(() =>
      new WebhookVerifier(secret, { toleranceSeconds: 3600 }).verify(old.payload, old.headers),
    ).toThrow(WebhookRejectedError);
  });

  it("refuses a genuine body re-signed under another webhook-id", () => {
    const { payload, headers } = delivery(event, new Date(), "evt-other");
    expect(() => new WebhookVerifier(secret).verify(payload, headers)).toThrow(/differ/);
  });

  it("refuses a signed body that is not a gateway event", () => {
    const { payload, headers } = delivery({
      id: event.id,
      type: "payment.pending",
      created_at: "x",
      data: {},
    });
    expect(() => new WebhookVerifier(secret).verify(payload, headers)).toThrow(/not a gateway event/);
  });
});
