import { createHmac, timingSafeEqual } from "node:crypto";

/** The header that carries a callback's signature. */
export const SIGNATURE_HEADER = "x-sandbox-signature";

/** HMAC-SHA256 over `<timestamp>.<body>` keyed by the provider's credentials, in hex. */
export function signatureOf(credentials: string, timestampSeconds: number, body: string): string {
  return createHmac("sha256", credentials).update(`${timestampSeconds}.`).update(body).digest("hex");
}

/** The header value `t=<unix seconds>,v1=<hex>` for a body signed at `timestampSeconds`. */
export function signatureHeader(credentials: string, timestampSeconds: number, body: string): string {
  return `t=${timestampSeconds},v1=${signatureOf(credentials, timestampSeconds, body)}`;
}

/** Compares two secrets in constant time (for the provider API's bearer credentials). */
export function secretsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
