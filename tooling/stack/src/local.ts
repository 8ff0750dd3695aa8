import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./stack.ts";

/** The git-ignored folder of a local stack's state: Postgres data, NATS store, secrets. */
export const DATA_DIR = join(REPO_ROOT, ".data");
export const ADMIN_TOKEN_FILE = join(DATA_DIR, "admin-token");
/** The HMAC key of signed receipt links (`RECEIPT_URL_SECRET`). */
export const RECEIPT_URL_SECRET_FILE = join(DATA_DIR, "receipt-url-secret");
/** The demo shop's webhook signing secret, for the runner's webhook receiver. */
export const WEBHOOK_SECRET_FILE = join(DATA_DIR, "webhook-secret");
/** Where the runner's webhook receiver listens, and the demo shop's webhook URL. */
export const LOCAL_WEBHOOK_PORT = 8083;
export const LOCAL_WEBHOOK_URL = `http://127.0.0.1:${LOCAL_WEBHOOK_PORT}/webhooks`;

/** Reads a secret file, or undefined when it is missing or empty. */
export function readSecret(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  return readFileSync(file, "utf8").trim() || undefined;
}

/** Writes a secret file readable by its owner only. */
export function writeSecret(file: string, value: string): void {
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
}

/** The local admin token: reused from `.data/admin-token`, or generated (256 bits) and saved there. */
export function localAdminToken(): string {
  const existing = readSecret(ADMIN_TOKEN_FILE);
  if (existing) return existing;
  const token = randomBytes(32).toString("base64url");
  writeSecret(ADMIN_TOKEN_FILE, token);
  return token;
}

/** The HMAC key of flexible links' `k` credentials (`FLEXIBLE_LINK_SECRET`). */
export const FLEXIBLE_LINK_SECRET_FILE = join(DATA_DIR, "flexible-link-secret");

/** The local flexible-link secret, kept across restarts so a retried link keeps its URL. */
export function localFlexibleLinkSecret(): string {
  const existing = readSecret(FLEXIBLE_LINK_SECRET_FILE);
  if (existing) return existing;
  const secret = randomBytes(32).toString("base64url");
  writeSecret(FLEXIBLE_LINK_SECRET_FILE, secret);
  return secret;
}

/** The local receipt link secret: reused from `.data/receipt-url-secret`, or generated (256 bits) and saved there. */
export function localReceiptUrlSecret(): string {
  const existing = readSecret(RECEIPT_URL_SECRET_FILE);
  if (existing) return existing;
  const secret = randomBytes(32).toString("base64url");
  writeSecret(RECEIPT_URL_SECRET_FILE, secret);
  return secret;
}
