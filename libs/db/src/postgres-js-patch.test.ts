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

describe("postgres.js beginning a transaction on a busy connection", () => {
  it("reserves the connection when BEGIN fills its pipeline, so later statements stay out of the transaction", async () => {
    // One connection and a pipeline of one: BEGIN sent behind a running statement is the
    // one that fills the pipeline, where postgres.js 3.4.9 skipped reserving the connection
    // (porsager/postgres#1189). BEGIN then failed with UNSAFE_TRANSACTION and left a
    // transaction open on the server, which every later autocommit statement joined and
    // which nothing ever committed.
    // max_pipeline is a postgres.js option its types leave out (passed as a variable, not
    // checked as a literal).
    const pipelineOfOne = { max: 1, max_pipeline: 1, onnotice: () => {} };
    const sql = postgres(testDb.url, pipelineOfOne);
    const reader = postgres(testDb.url, { max: 1, onnotice: () => {} });
    try {
      await sql`create table begin_probe (n int)`;
      const running = sql`select pg_sleep(0.1)`.execute();
      const tx = sql.begin(async (t) => {
        await t`insert into begin_probe values (1)`;
      });
      await running;
      await tx;
      await sql`insert into begin_probe values (2)`;

      expect(await reader`select n from begin_probe order by n`).toEqual([{ n: 1 }, { n: 2 }]);
      expect(
        await reader`select count(*)::int as open from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
      ).toEqual([{ open: 0 }]);
    } finally {
      await sql.end({ timeout: 1 });
      await reader.end({ timeout: 1 });
    }
  });
});
