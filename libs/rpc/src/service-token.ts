/**
 * Signed service tokens for the internal hop. A token names the calling service
 * (`iss`), the one gRPC service it may be presented to (`aud`, the service's full name)
 * and its expiry (`exp`), and is signed with HMAC-SHA256 under a key of the shared key
 * set. The first key of the set signs; every key verifies, so a key is rotated in
 * without a flag day (add it second, roll out, move it first, roll out, drop the old).
 *
 * Format: `gw1.<key id>.<base64url(JSON payload)>.<base64url(signature)>`, sent as
 * `authorization: Bearer <token>` in the gRPC metadata.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** One shared secret and the id a token names it by. */
export interface ServiceKey {
  id: string;
  secret: Buffer;
}

/** The keys of a deployment: `signing` signs new tokens, all of `byId` verify. */
export interface ServiceKeySet {
  signing: ServiceKey;
  byId: ReadonlyMap<string, ServiceKey>;
}

/** What a verified token says. */
export interface ServiceTokenClaims {
  /** The calling service, for example `edge`. */
  iss: string;
  /** The full name of the gRPC service the token is for. */
  aud: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

const VERSION = "gw1";
/** Tokens live this long; clients reuse one until a minute before its end. */
export const SERVICE_TOKEN_TTL_MS = 5 * 60_000;
/** Clock difference between replicas that a verifier forgives. */
const CLOCK_SKEW_S = 30;
/** The shortest secret accepted: 256 bits, the HMAC-SHA256 block's worth of entropy. */
const MIN_SECRET_BYTES = 32;

/**
 * Parses `SERVICE_TOKEN_KEYS`: comma-separated `<id>:<secret>` pairs, the secret in
 * base64url (or base64) of at least 32 bytes; the first pair signs. Throws on anything
 * else, naming the problem but never the secret.
 */
export function parseServiceTokenKeys(value: string): ServiceKeySet {
  const keys: ServiceKey[] = [];
  for (const part of value.split(",")) {
    const trimmed = part.trim();
    if (trimmed === "") continue;
    const colon = trimmed.indexOf(":");
    if (colon <= 0) throw new Error("each key is <id>:<base64url secret>");
    const id = trimmed.slice(0, colon);
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id))
      throw new Error(`key id ${JSON.stringify(id)}: 1 to 32 of A-Z a-z 0-9 _ -`);
    const secret = Buffer.from(trimmed.slice(colon + 1), "base64url");
    if (secret.length < MIN_SECRET_BYTES)
      throw new Error(`key ${id}: the secret must be at least ${MIN_SECRET_BYTES} bytes`);
    if (keys.some((k) => k.id === id)) throw new Error(`key ${id} appears twice`);
    keys.push({ id, secret });
  }
  const signing = keys[0];
  if (signing === undefined) throw new Error("no key given");
  return { signing, byId: new Map(keys.map((k) => [k.id, k])) };
}

function sign(secret: Buffer, data: string): Buffer {
  return createHmac("sha256", secret).update(data).digest();
}

/** Issues a token for `caller` to present to the gRPC service `audience`. */
export function signServiceToken(
  keys: ServiceKeySet,
  claims: { caller: string; audience: string; ttlMs?: number },
  nowMs = Date.now(),
): string {
  const payload: ServiceTokenClaims = {
    iss: claims.caller,
    aud: claims.audience,
    exp: Math.floor((nowMs + (claims.ttlMs ?? SERVICE_TOKEN_TTL_MS)) / 1000),
  };
  const head = `${VERSION}.${keys.signing.id}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
  return `${head}.${sign(keys.signing.secret, head).toString("base64url")}`;
}

/** Why a token was refused; the reason goes into the refusal's message (never the token). */
export type TokenVerdict = { ok: true; claims: ServiceTokenClaims } | { ok: false; reason: string };

/**
 * Checks a token's form, key, signature, audience and expiry. `audiences` are the full
 * names of the services this server hosts.
 */
export function verifyServiceToken(
  keys: ServiceKeySet,
  token: string,
  audiences: ReadonlySet<string>,
  nowMs = Date.now(),
): TokenVerdict {
  const parts = token.split(".");
  if (parts.length !== 4 || parts[0] !== VERSION) return { ok: false, reason: "malformed service token" };
  const [version, keyId, body, signature] = parts as [string, string, string, string];
  const key = keys.byId.get(keyId);
  if (key === undefined) return { ok: false, reason: "service token signed with an unknown key" };
  const expected = sign(key.secret, `${version}.${keyId}.${body}`);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: "service token signature does not verify" };
  let claims: ServiceTokenClaims;
  try {
    claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as ServiceTokenClaims;
  } catch {
    return { ok: false, reason: "malformed service token" };
  }
  if (typeof claims.iss !== "string" || typeof claims.aud !== "string" || typeof claims.exp !== "number")
    return { ok: false, reason: "malformed service token" };
  if (!audiences.has(claims.aud)) return { ok: false, reason: "service token is for another service" };
  if (claims.exp + CLOCK_SKEW_S < nowMs / 1000) return { ok: false, reason: "service token expired" };
  return { ok: true, claims };
}
