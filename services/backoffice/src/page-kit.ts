import type { Context } from "hono";
import type { AdminAnswer } from "./admin-client.ts";
import type { PageContext } from "./views.ts";

/** A posted form's text fields. */
export type Form = Record<string, string>;

/** The back office app's per-request variables. */
export type BackofficeEnv = {
  Variables: {
    /** The session id from the cookie (after the session check). */
    sid: string;
    /** The POST body, read once by the session middleware. */
    form: Form;
    /** The answer is a file with its own headers (the receipt). */
    file?: boolean;
    /** The page embeds same-origin frames (the receipts of the manual-check queue). */
    frames?: boolean;
  };
};
export type BoContext = Context<BackofficeEnv>;

/** What every page module gets from the app. */
export interface PageKit {
  admin(method: string, path: string, body?: unknown): Promise<AdminAnswer>;
  /** The logged-in page context (CSRF token, the messages of the URL). */
  ctx(c: BoContext, current: PageContext["current"]): PageContext;
  /** Runs an admin call for a form and goes back to `back` with its outcome. */
  act(c: BoContext, back: string, call: Promise<AdminAnswer>, done: string): Promise<Response>;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The admin API's error message, or the status when it sent none. */
export const errorText = (a: AdminAnswer) =>
  (a.json?.error?.message as string | undefined) ?? `the request failed (${a.status})`;

/** A path with a one-line message for the next page. */
export const withMessage = (path: string, kind: "notice" | "error", text: string) =>
  `${path}${path.includes("?") ? "&" : "?"}${kind}=${encodeURIComponent(text.slice(0, 300))}`;

/** Builds the page kit over an admin caller and the session's CSRF tokens. */
export function pageKit(admin: PageKit["admin"], csrfOf: (sid: string) => string): PageKit {
  return {
    admin,
    ctx: (c, current) => ({
      csrf: csrfOf(c.get("sid")),
      current,
      notice: c.req.query("notice"),
      error: c.req.query("error"),
    }),
    async act(c, back, call, done) {
      const res = await call;
      if (res.status >= 300) return c.redirect(withMessage(back, "error", errorText(res)), 303);
      return c.redirect(withMessage(back, "notice", done), 303);
    },
  };
}
