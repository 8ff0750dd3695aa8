import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** A flexible link's credential `k`: an HMAC of its operation id; only sha256(k) is stored. */

/** A new random HMAC key, for a process started without FLEXIBLE_LINK_SECRET. */
export const ephemeralLinkSecret = () => randomBytes(32);

export function linkCredential(secret: Buffer, operationId: string): string {
  return createHmac("sha256", secret).update(`flexible-link\n${operationId}`).digest("base64url");
}

export const sha256 = (text: string) => createHash("sha256").update(text).digest();

/** Constant-time check of a presented `k` against the stored hash (both hashed to 32 bytes first). */
export function credentialMatches(k: string, kHashHex: string): boolean {
  const stored = Buffer.from(kHashHex, "hex");
  const given = sha256(k);
  return stored.length === given.length && timingSafeEqual(stored, given);
}
