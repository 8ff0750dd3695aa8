import { createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inProcessApp, migrationsFolder } from "./app.ts";

const CREDENTIALS = "sandbox-secret-credentials-0003";
let database: TestDatabase;
const pools: Sql[] = [];

/** One sandbox process's app (no listener, no callback worker), counting the statements it sends. */
function sandboxApp() {
  const counter = { statements: 0 };
  const { app, sql, db } = inProcessApp(database.url, {
    max: 2,
    onStatement: () => void counter.statements++,
  });
  pools.push(sql);
  const call = async (method: string, path: string, body: unknown, credentials = CREDENTIALS) => {
    const res = await app.request(path, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${credentials}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: JSON.parse(await res.text()) };
  };
  const put = (name: string, settings: Record<string, unknown> = {}) =>
    call("PUT", `/control/providers/${name}`, { credentials: CREDENTIALS, ...settings });
  const payin = (
    name: string,
    reference: string,
    credentials?: string,
    extra: Record<string, unknown> = {},
  ) =>
    call(
      "POST",
      `/providers/${name}/v1/payins`,
      {
        reference,
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
        callback_url: "http://127.0.0.1:9/callbacks",
        ...extra,
      },
      credentials,
    );
  return { counter, put, payin, sql, db };
}

let a: ReturnType<typeof sandboxApp>;
let b: ReturnType<typeof sandboxApp>;

beforeAll(async () => {
  database = await createTestDatabase();
  a = sandboxApp();
  b = sandboxApp();
  await migrateSchema(a.sql, a.db, "sandbox", migrationsFolder);
});

afterAll(async () => {
  for (const sql of pools) await sql.end();
  await database?.drop();
});

describe("the create path", () => {
  it("sends one statement per create once the provider is known", async () => {
    await a.put("one-trip");
    expect((await a.payin("one-trip", "trip-1")).json.decision).toBe("accepted");
    a.counter.statements = 0;
    const res = await a.payin("one-trip", "trip-2");
    expect(res.json).toMatchObject({ reference: "trip-2", decision: "accepted", status: "pending" });
    expect(a.counter.statements).toBe(1);
  });

  it("applies a behaviour change to the very next create, in this process and in another", async () => {
    await a.put("switch");
    expect((await a.payin("switch", "sw-1")).json.decision).toBe("accepted");
    expect((await b.payin("switch", "sw-2")).json.decision).toBe("accepted");

    await a.put("switch", { payin: { mode: "decline", decline_reason: "limits_exceeded" } });
    expect((await a.payin("switch", "sw-3")).json).toMatchObject({
      decision: "declined",
      reason: "limits_exceeded",
    });
    expect((await b.payin("switch", "sw-4")).json).toMatchObject({
      decision: "declined",
      reason: "limits_exceeded",
    });

    // Another process changes it back: this one's knowledge of the provider is stale.
    await b.put("switch", { payin: { mode: "accept", receipt_required: true } });
    expect((await a.payin("switch", "sw-5")).json).toMatchObject({
      decision: "accepted",
      receipt_required: true,
    });

    // A writer that bypasses the control API (the fault suite's tampering does) is seen too.
    await a.sql`update sandbox.providers set payin = '{"mode":"decline","receipt_required":false}'::jsonb
                where name = 'switch'`;
    expect((await a.payin("switch", "sw-6")).json.decision).toBe("declined");
    expect((await b.payin("switch", "sw-7")).json.decision).toBe("declined");
  });

  it("applies new credentials to the very next create, whatever the body", async () => {
    await a.put("rotate");
    expect((await a.payin("rotate", "rot-1")).status).toBe(200);
    expect((await b.payin("rotate", "rot-2")).status).toBe(200);
    const rotated = "sandbox-rotated-credentials-04";
    await b.put("rotate", { credentials: rotated });
    for (const app of [a, b]) {
      expect((await app.payin("rotate", "rot-3")).status).toBe(401);
      // A refused body does not tell an old key holder more than a good one.
      expect((await app.payin("rotate", "rot-4", CREDENTIALS, { amount: "x" })).status).toBe(401);
      expect((await app.payin("rotate", "rot-5", rotated)).status).toBe(200);
    }
  });

  it("forgets a provider that is gone", async () => {
    await a.put("gone");
    expect((await a.payin("gone", "gone-1")).status).toBe(200);
    await a.sql`delete from sandbox.operations where provider = 'gone'`;
    await a.sql`delete from sandbox.providers where name = 'gone'`;
    expect((await a.payin("gone", "gone-2")).status).toBe(401);
  });
});
