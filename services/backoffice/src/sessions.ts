import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Database } from "@gw/db";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import { sessions } from "./db/schema.ts";

/**
 * The back office's sessions, kept on the server (issue 27). The operator exchanges the
 * admin token once, on the login form, for a session: a row in `backoffice.sessions`
 * and a cookie holding only its random id (32 bytes); the table keeps the id's sha256,
 * never the id. Every request looks the row up, so logout, "end all sessions" and
 * expiry take effect at once on every replica. A session ends at the first of: logout,
 * "end all sessions", `SESSION_TTL_MS` after login (absolute), `SESSION_IDLE_MS` after
 * the last request (idle).
 *
 * Every form carries a CSRF token, the HMAC of the session id under a key derived from
 * the admin token (the same on every replica, and rotating the token invalidates every
 * form); the login form's token is bound the same way to a random value in a cookie.
 */

/** An operator logs in again after a working day at most. */
export const SESSION_TTL_MS = 8 * 3600_000;
/** A session nobody used for this long ends. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** `last_seen_at` is written at most this often per session, not on every request. */
const TOUCH_EVERY_MS = 60_000;

const b64 = (buf: Buffer) => buf.toString("base64url");
const hashOf = (id: string) => createHash("sha256").update(id).digest("hex");
/** A session id: 32 random bytes, base64url. Anything else is not looked up at all. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface SessionLimits {
  ttlMs: number;
  idleMs: number;
}

/** The session table, and the CSRF tokens bound to a session or a login form. */
export class SessionStore {
  readonly #db: Database;
  readonly #key: Buffer;
  readonly #limits: SessionLimits;
  readonly #now: () => number;

  constructor(
    db: Database,
    adminToken: string,
    limits: SessionLimits = { ttlMs: SESSION_TTL_MS, idleMs: SESSION_IDLE_MS },
    now: () => number = Date.now,
  ) {
    this.#db = db;
    this.#key = createHmac("sha256", adminToken).update("gw-backoffice-csrf-v2").digest();
    this.#limits = limits;
    this.#now = now;
  }

  get limits(): SessionLimits {
    return this.#limits;
  }

  /** Starts a session; answers the cookie's value (the id), which is never stored. */
  async start(): Promise<string> {
    const id = b64(randomBytes(32));
    const now = this.#now();
    await this.#db.insert(sessions).values({
      idHash: hashOf(id),
      createdAt: new Date(now),
      lastSeenAt: new Date(now),
      expiresAt: new Date(now + this.#limits.ttlMs),
    });
    // Ended sessions are kept a day for the record, then dropped; here rather than in a job.
    await this.#db.delete(sessions).where(lt(sessions.expiresAt, new Date(now - 86_400_000)));
    return id;
  }

  /** Whether the cookie's id names a live session; a live one is marked as seen now. */
  async check(id: string | undefined): Promise<boolean> {
    if (!id || !SESSION_ID.test(id)) return false;
    const now = new Date(this.#now());
    const idleSince = new Date(now.getTime() - this.#limits.idleMs);
    const [row] = await this.#db
      .select({ lastSeenAt: sessions.lastSeenAt })
      .from(sessions)
      .where(
        and(
          eq(sessions.idHash, hashOf(id)),
          isNull(sessions.revokedAt),
          gt(sessions.expiresAt, now),
          gt(sessions.lastSeenAt, idleSince),
        ),
      )
      .limit(1);
    if (!row) return false;
    if (now.getTime() - row.lastSeenAt.getTime() >= TOUCH_EVERY_MS)
      await this.#db
        .update(sessions)
        .set({ lastSeenAt: now })
        .where(eq(sessions.idHash, hashOf(id)));
    return true;
  }

  /** Ends one session (logout). */
  async revoke(id: string): Promise<void> {
    await this.#db
      .update(sessions)
      .set({ revokedAt: new Date(this.#now()), revokedBy: "logout" })
      .where(and(eq(sessions.idHash, hashOf(id)), isNull(sessions.revokedAt)));
  }

  /** Ends every live session, the caller's included; answers how many. */
  async revokeAll(): Promise<number> {
    const now = new Date(this.#now());
    const ended = await this.#db
      .update(sessions)
      .set({ revokedAt: now, revokedBy: "end_all" })
      .where(isNull(sessions.revokedAt))
      .returning({ idHash: sessions.idHash });
    return ended.length;
  }

  #mac(text: string) {
    return b64(createHmac("sha256", this.#key).update(text).digest());
  }

  /** The CSRF token of a session id (or of a login form's `login.<nonce>`). */
  csrf(id: string): string {
    return this.#mac(`csrf.${id}`);
  }

  /** Whether `token` is the CSRF token of `id`. */
  checkCsrf(id: string, token: unknown): boolean {
    return typeof token === "string" && equal(token, this.csrf(id));
  }
}

/** A random value for the login form's cookie. */
export const loginNonce = () => b64(randomBytes(18));
