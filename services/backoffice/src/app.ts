import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "@gw/log";
import { type BodyLimitRule, bodyLimit } from "@gw/runtime";
import { type Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { html } from "hono/html";
import type { AdminClient } from "./admin-client.ts";
import { type BackofficeEnv, type Form, pageKit } from "./page-kit.ts";
import { configPages } from "./pages/config.ts";
import { deadLetterPages } from "./pages/dead-letters.ts";
import { merchantPages } from "./pages/merchants.ts";
import { operationPages } from "./pages/operations.ts";
import { operatorQueuePages } from "./pages/operator-queue.ts";
import { providerFactPages } from "./pages/provider-facts.ts";
import { reviewPages } from "./pages/reviews.ts";
import { shopPages } from "./pages/shop.ts";
import { loginNonce, type SessionStore } from "./sessions.ts";
import { BACKOFFICE_CSS, BACKOFFICE_JS, layout, loginPage } from "./views.ts";

/**
 * The operators' back office, its own process: server-rendered pages at `/backoffice`
 * over the edge's admin API (`AdminClient`, the only way it reaches the gateway), behind
 * a login that exchanges the admin token for a server-side session (`SessionStore`).
 * Every POST must come from this origin (hono/csrf) and carry the session's CSRF token;
 * pages send a strict CSP and load nothing from outside.
 */

export interface BackofficeDeps {
  adminToken: string;
  sessions: SessionStore;
  admin: AdminClient;
  logger: Logger;
  /** Answers false while the process drains, so `/readyz` takes it out of the balancer. */
  ready?: () => boolean;
}

export const BACKOFFICE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The manual-check page embeds each receipt from `/backoffice/reviews/{id}/receipt`, and nothing else. */
export const REVIEWS_CSP = BACKOFFICE_CSP.replace(
  "connect-src 'self';",
  "connect-src 'self'; frame-src 'self';",
);

/** The login form (a CSRF token and the admin token), read before any credential is checked. */
export const LOGIN_BODY_LIMIT = 4 * 1024;
/** An operator's forms after login: names, settings, routes, pricing tiers, a reason. */
export const FORM_BODY_LIMIT = 64 * 1024;
/** Every other request (pages, assets, probes, unknown paths) takes no body worth the name. */
export const OTHER_BODY_LIMIT = 16 * 1024;

/** The back office's body limit per route (docs/operations.md, "Body limits"). */
export const BODY_LIMIT_RULES: BodyLimitRule[] = [
  { path: "/backoffice/login", maxBytes: LOGIN_BODY_LIMIT },
  { path: "/backoffice/*", maxBytes: FORM_BODY_LIMIT },
];

/** Loopback hosts run locally over plain HTTP, where a Secure cookie would not be kept. */
const isLocal = (url: string) => /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(new URL(url).hostname);

/**
 * Over HTTPS the cookies carry the `__Host-` prefix (Secure, Path=/, no Domain: no
 * subdomain can set or shadow them); on loopback over plain HTTP they cannot.
 */
export const cookieNames = (secure: boolean) => ({
  session: secure ? "__Host-gw_backoffice" : "gw_backoffice",
  login: secure ? "__Host-gw_backoffice_login" : "gw_backoffice_login",
});

/** Builds the back office app without listening. */
export function buildBackofficeApp(deps: BackofficeDeps) {
  const { sessions } = deps;
  const app = new Hono<BackofficeEnv>();
  const kit = pageKit(deps.admin.call, (sid) => sessions.csrf(sid));
  // The shared middleware (@gw/runtime), first: every route, while reading, before any
  // cookie, CSRF token or form is looked at.
  app.use(
    bodyLimit({
      routes: BODY_LIMIT_RULES,
      otherwise: OTHER_BODY_LIMIT,
      tooLarge: (c, maxBytes) => c.text(`the body exceeds ${maxBytes} bytes`, 413),
    }),
  );

  app.get("/livez", (c) => c.body(null, 204));
  app.get("/healthz", (c) => c.body(null, 204));
  app.get("/readyz", (c) => c.body(null, (deps.ready?.() ?? true) ? 204 : 503));
  app.get("/", (c) => c.redirect("/backoffice", 303));
  // A trailing slash (typed or bookmarked) is the same page.
  app.get("/backoffice/", (c) => c.redirect(`/backoffice${new URL(c.req.url).search}`, 301));

  const bo = new Hono<BackofficeEnv>();
  bo.use(async (c, next) => {
    await next();
    // The receipt file sets its own headers: a sandbox, framed by this origin only.
    if (c.get("file")) return;
    c.header("Content-Security-Policy", c.get("frames") ? REVIEWS_CSP : BACKOFFICE_CSP);
    // Same-origin referrers only: browsers then send a real Origin on the forms' POSTs.
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Cache-Control", "no-store");
  });
  // A form posted from another site is refused by its Origin (or Sec-Fetch-Site) before
  // anything reads it. Behind a proxy the request URL's scheme may differ from the
  // browser's: the Origin's host must then be the Host the browser addressed.
  bo.use(
    csrf({
      origin: (origin, c) =>
        origin === new URL(c.req.url).origin ||
        (URL.canParse(origin) && new URL(origin).host === c.req.header("host")),
    }),
  );

  bo.get("/assets/backoffice.css", (c) =>
    c.body(BACKOFFICE_CSS, 200, { "content-type": "text/css; charset=utf-8" }),
  );
  bo.get("/assets/backoffice.js", (c) =>
    c.body(BACKOFFICE_JS, 200, { "content-type": "text/javascript; charset=utf-8" }),
  );

  const secureOf = (c: Context) => !isLocal(c.req.url);
  const names = (c: Context) => cookieNames(secureOf(c));
  const cookieOptions = (c: Context, maxAgeS: number) =>
    ({ httpOnly: true, sameSite: "Strict", secure: secureOf(c), path: "/", maxAge: maxAgeS }) as const;

  const readForm = async (c: Context): Promise<Form> => {
    const body = await c.req.parseBody();
    const form: Form = {};
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") form[k] = v;
    return form;
  };

  const showLogin = (c: Context, error?: string, status = 200) => {
    const nonce = loginNonce();
    setCookie(c, names(c).login, nonce, cookieOptions(c, 1800));
    return c.html(loginPage(sessions.csrf(`login.${nonce}`), error), status as 200);
  };

  bo.get("/login", (c) => showLogin(c));
  bo.post("/login", async (c) => {
    const form = await readForm(c);
    const nonce = getCookie(c, names(c).login);
    if (!nonce || !sessions.checkCsrf(`login.${nonce}`, form._csrf))
      return showLogin(c, "The form expired. Log in again.", 403);
    if (!form.token || !secretsEqual(form.token, deps.adminToken)) {
      deps.logger.warn("back office login refused");
      return showLogin(c, "That is not the admin token.", 401);
    }
    const sid = await sessions.start();
    setCookie(c, names(c).session, sid, cookieOptions(c, sessions.limits.ttlMs / 1000));
    setCookie(c, names(c).login, "", cookieOptions(c, 0));
    deps.logger.info("back office login");
    return c.redirect("/backoffice", 303);
  });

  // Everything below needs a live session; every POST also its CSRF token.
  bo.use(async (c, next) => {
    const sid = getCookie(c, names(c).session);
    if (!sid || !(await sessions.check(sid))) {
      if (c.req.method === "GET") return c.redirect("/backoffice/login", 303);
      return c.text("not logged in", 401);
    }
    c.set("sid", sid);
    if (c.req.method === "POST") {
      const form = await readForm(c);
      if (!sessions.checkCsrf(sid, form._csrf)) return c.text("invalid or missing CSRF token", 403);
      c.set("form", form);
    }
    return next();
  });

  bo.post("/logout", async (c) => {
    await sessions.revoke(c.get("sid"));
    setCookie(c, names(c).session, "", cookieOptions(c, 0));
    deps.logger.info("back office logout");
    return c.redirect("/backoffice/login", 303);
  });

  // Every operator is logged out at once (a token leaked, an operator left): this one too.
  bo.post("/sessions/end-all", async (c) => {
    const ended = await sessions.revokeAll();
    setCookie(c, names(c).session, "", cookieOptions(c, 0));
    deps.logger.warn({ ended }, "back office sessions ended");
    return c.redirect("/backoffice/login", 303);
  });

  merchantPages(bo, kit);
  operationPages(bo, kit);
  shopPages(bo, kit);
  configPages(bo, kit);
  reviewPages(bo, kit, deps.admin);
  deadLetterPages(bo, kit);
  providerFactPages(bo, kit);
  operatorQueuePages(bo, kit);
  bo.notFound((c) => c.html(layout("Not found", undefined, html`<p>There is no such page.</p>`), 404));

  app.route("/backoffice", bo);
  return app;
}

/** Compares two secrets in constant time over their hashes (lengths may differ). */
function secretsEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}
