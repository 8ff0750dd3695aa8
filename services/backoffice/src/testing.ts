import { connect, type Database, migrateSchema } from "@gw/db";
import {
  ADMIN_TOKEN,
  type EdgeTestDatabase,
  edgeTestDatabase,
  type FakeServices,
  testApp,
} from "@gw/edge/testing";
import type { Logger } from "@gw/log";
import { pino } from "pino";
import { adminClient } from "./admin-client.ts";
import { buildBackofficeApp } from "./app.ts";
import { migrationsFolder } from "./server.ts";
import { SESSION_IDLE_MS, SESSION_TTL_MS, SessionStore } from "./sessions.ts";

export { ADMIN_TOKEN };

/** One database with the edge's and the back office's schemas, for a test file. */
export interface BackofficeTestDatabase {
  edge: EdgeTestDatabase;
  db: Database;
  close(): Promise<void>;
}

export async function backofficeTestDatabase(): Promise<BackofficeTestDatabase> {
  const edge = await edgeTestDatabase();
  const { sql, db } = connect(edge.testDb.url, { max: 3, application: "backoffice-test" });
  await migrateSchema(sql, db, "backoffice", migrationsFolder);
  return {
    edge,
    db,
    async close() {
      await sql.end({ timeout: 5 });
      await edge.close();
    },
  };
}

/**
 * The back office over a real edge app (in process, on the test database, with fakes for
 * the services behind it): its admin client's fetch is the edge app's `request`.
 */
export function testBackoffice(
  database: BackofficeTestDatabase,
  options: { fakes?: FakeServices; logger?: Logger; now?: () => number } = {},
) {
  const edge = testApp(database.edge, { fakes: options.fakes });
  const sessions = new SessionStore(
    database.db,
    ADMIN_TOKEN,
    { ttlMs: SESSION_TTL_MS, idleMs: SESSION_IDLE_MS },
    options.now,
  );
  const app = buildBackofficeApp({
    adminToken: ADMIN_TOKEN,
    sessions,
    admin: adminClient("http://edge.test", ADMIN_TOKEN, (url, init) => edge.request(url, init)),
    logger: options.logger ?? pino({ level: "silent" }),
  });
  return { app, edge, sessions };
}

type App = ReturnType<typeof testBackoffice>["app"];

/** A browser's cookie jar, just enough for one origin. */
export class Jar {
  readonly cookies = new Map<string, string>();
  take(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const i = pair.indexOf("=");
      const value = pair.slice(i + 1);
      if (value === "") this.cookies.delete(pair.slice(0, i));
      else this.cookies.set(pair.slice(0, i), value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

export const ORIGIN = "http://127.0.0.1";
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

export async function get(app: App, jar: Jar, path: string) {
  const res = await app.request(`${ORIGIN}${path}`, { headers: { cookie: jar.header() } });
  jar.take(res);
  return { res, html: await res.text() };
}

/** A form POST as a browser sends it: from this origin unless `origin` says otherwise. */
export async function post(app: App, jar: Jar, path: string, form: Record<string, string>, origin = ORIGIN) {
  const res = await app.request(`${ORIGIN}${path}`, {
    method: "POST",
    headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin },
    body: new URLSearchParams(form).toString(),
  });
  jar.take(res);
  return { res, html: await res.text() };
}

export async function login(app: App, token = ADMIN_TOKEN) {
  const jar = new Jar();
  const page = await get(app, jar, "/backoffice/login");
  const res = await post(app, jar, "/backoffice/login", { _csrf: csrfOf(page.html), token });
  return { jar, res };
}
