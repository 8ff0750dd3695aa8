import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The back office's session: the operator exchanges the admin token once, on the login
 * form, for a signed cookie. The cookie holds no secret, only an expiry and a random
 * session id, signed with a key derived from the admin token, so rotating the token ends
 * every session and nothing is stored anywhere. Every form carries a CSRF token derived
 * from the session id with the same key, checked on every POST.
 */

export const SESSION_COOKIE = "gw_backoffice";
/** Before login: the random value the login form's CSRF token is bound to. */
export const LOGIN_COOKIE = "gw_backoffice_login";
/** An operator logs in again after a working day. */
export const SESSION_TTL_MS = 8 * 3600_000;

const b64 = (buf: Buffer) => buf.toString("base64url");

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Signs and checks sessions and CSRF tokens with a key derived from the admin token. */
export class SessionKeys {
  readonly #key: Buffer;

  constructor(adminToken: string) {
    this.#key = createHmac("sha256", adminToken).update("gw-backoffice-session-v1").digest();
  }

  #mac(text: string) {
    return b64(createHmac("sha256", this.#key).update(text).digest());
  }

  /** A new session cookie value, valid for `SESSION_TTL_MS` from `now`. */
  issue(now = Date.now()): string {
    const body = `${now + SESSION_TTL_MS}.${b64(randomBytes(18))}`;
    return `${body}.${this.#mac(`session.${body}`)}`;
  }

  /** The session id of a valid, unexpired cookie value; undefined otherwise. */
  verify(value: string | undefined, now = Date.now()): string | undefined {
    if (!value) return undefined;
    const parts = value.split(".");
    if (parts.length !== 3) return undefined;
    const [expires = "", sid = "", mac = ""] = parts;
    if (!equal(mac, this.#mac(`session.${expires}.${sid}`))) return undefined;
    if (!/^\d+$/.test(expires) || Number(expires) <= now) return undefined;
    return sid;
  }

  /** The CSRF token of a session (or of a login form's random value). */
  csrf(sid: string): string {
    return this.#mac(`csrf.${sid}`);
  }

  /** Whether `token` is the CSRF token of `sid`. */
  checkCsrf(sid: string, token: unknown): boolean {
    return typeof token === "string" && equal(token, this.csrf(sid));
  }
}

/** A random value for the login form's cookie. */
export const loginNonce = () => b64(randomBytes(18));
