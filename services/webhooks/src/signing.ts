import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

/** A new signing secret in the Standard Webhooks format: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** The Standard Webhooks headers of one attempt. */
export interface SignatureHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * Signs one attempt. The timestamp is the attempt's own, so a receiver's replay window
 * holds for retries too; every secret given signs (space-separated `v1,` signatures),
 * which lets a receiver verify with either the new or the previous secret during a
 * rotation.
 */
export function signAttempt(eventId: string, payload: string, secrets: string[], at: Date): SignatureHeaders {
  if (secrets.length === 0) throw new Error("at least one secret is needed to sign");
  const signature = secrets.map((s) => new Webhook(s).sign(eventId, at, payload)).join(" ");
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
  };
}
