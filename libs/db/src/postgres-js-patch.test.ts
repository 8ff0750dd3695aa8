import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CutKind, type FaultProxy, startFaultProxy } from "./fault-proxy.ts";
import { createTestDatabase, type TestDatabase } from "./test-database.ts";

const child = fileURLToPath(new URL("./postgres-js-patch.child.ts", import.meta.url));

let testDb: TestDatabase;
let proxy: FaultProxy;

beforeAll(async () => {
  testDb = await createTestDatabase();
  proxy = await startFaultProxy(testDb.url);
});

afterAll(async () => {
  await proxy?.close();
  await testDb?.drop();
});

/**
 * Runs the child of `scenario`, cuts its connection when it is ready, and returns how it
 * ended: its exit code, its report, and what it wrote to stderr.
 */
async function runChild(scenario: "reserve" | "begin", cut: CutKind) {
  const proc = fork(child, [proxy.url, scenario], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
  let stderr = "";
  proc.stderr?.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  let report: unknown;
  proc.on("message", (msg) => {
    if (msg === "ready") {
      proxy.cutOnNextClientData(cut);
      proc.send("go");
    } else report = msg;
  });
  const [code] = (await once(proc, "exit")) as [number | null];
  return { code, report, stderr };
}

describe("postgres.js writing to a connection that is gone", () => {
  // Each case is deterministic: the cut always lands on the statement after "ready", and
  // the next write always finds the socket gone. A few rounds guard against a lucky order.
  const rounds = 2;

  for (const cut of ["close", "reset"] as const) {
    it(`fails the next statement on a reserved connection after a ${cut}, and the process lives`, async () => {
      for (let round = 0; round < rounds; round++) {
        const { code, report, stderr } = await runChild("reserve", cut);
        expect(stderr).not.toContain("TypeError");
        expect(code).toBe(0);
        const expected = cut === "reset" ? "ECONNRESET" : "CONNECTION_CLOSED";
        expect(report).toEqual({ first: expected, second: "CONNECTION_CLOSED" });
      }
    });

    it(`fails a transaction whose statement was cut by a ${cut}, and the process lives`, async () => {
      for (let round = 0; round < rounds; round++) {
        const { code, report, stderr } = await runChild("begin", cut);
        expect(stderr).not.toContain("TypeError");
        expect(code).toBe(0);
        const expected = cut === "reset" ? "ECONNRESET" : "CONNECTION_CLOSED";
        expect(report).toEqual({ first: expected, second: "CONNECTION_CLOSED" });
      }
    });
  }
});

describe("postgres.js reserving a connection", () => {
  it("does not hand out again a reserved connection released after it was gone", async () => {
    // One connection: a dead one left in the pool would take every query after it.
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      const conn = await sql.reserve();
      await conn`select 1`;
      proxy.cutOnNextClientData("close");
      await expect(conn`select 2`).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });

      conn.release();

      for (let i = 0; i < 3; i++) expect(await sql`select ${i}::int as i`).toEqual([{ i }]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
