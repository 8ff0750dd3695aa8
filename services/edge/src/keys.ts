import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Every API key starts with this, so leaked keys are easy to recognise and scan for. */
export const API_KEY_PREFIX = "gw_live_";
/** 256 random bits, base64url without padding. */
const SECRET_BYTES = 32;
const SECRET_CHARS = 43;
/** How much of the key lists show: the prefix and four characters, never enough to guess. */
const DISPLAY_CHARS = API_KEY_PREFIX.length + 4;

/** A freshly issued key: the plaintext goes to the caller once, the rest to the database. */
export interface IssuedKey {
  plaintext: string;
  hash: string;
  displayPrefix: string;
}

/** Issues a new random API key. */
export function issueApiKey(): IssuedKey {
  const plaintext = API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString("base64url");
  return { plaintext, hash: hashApiKey(plaintext), displayPrefix: plaintext.slice(0, DISPLAY_CHARS) };
}

/** The stored form of a key: sha256, hex. The key has 256 bits of entropy, so no salt is needed. */
export function hashApiKey(plaintext: string): string {
  return createHash("sha256").update(plaintext, "utf8").digest("hex");
}

/** True when the text has the shape of a key we issue; anything else is refused without a lookup. */
export function looksLikeApiKey(text: string): boolean {
  return (
    text.length === API_KEY_PREFIX.length + SECRET_CHARS &&
    text.startsWith(API_KEY_PREFIX) &&
    /^[A-Za-z0-9_-]+$/.test(text.slice(API_KEY_PREFIX.length))
  );
}

/** Compares two secrets in constant time (over their digests, so lengths may differ). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
