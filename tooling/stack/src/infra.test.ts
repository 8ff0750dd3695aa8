import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { ensureNats, startEmbeddedPostgres } from "./infra.ts";

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-infra-"));
  // Run as root, the package starts Postgres as a `postgres` user, which must be able to
  // reach the data folder (as it can reach the repository's .data/).
  chmodSync(dir, 0o755);
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("the local stack's fallbacks on a machine without the services", () => {
  it("starts an embedded real Postgres from the npm package, creates the database, and keeps data across restarts", async () => {
    const dir = join(scratch(), "postgres");
    const first = await startEmbeddedPostgres(dir, "gateway");
    try {
      const sql = postgres(first.url, { max: 1, onnotice: () => {} });
      await sql`create table kept (v numeric)`;
      await sql`insert into kept values (1000.01)`;
      const [version] = await sql<{ server_version: string }[]>`show server_version`;
      expect(version?.server_version).toMatch(/^\d+/);
      await sql.end();
    } finally {
      await first.stop();
    }
    const second = await startEmbeddedPostgres(dir, "gateway");
    try {
      const sql = postgres(second.url, { max: 1, onnotice: () => {} });
      const rows = await sql<{ v: string }[]>`select v from kept`;
      expect(rows.map((r) => r.v)).toEqual(["1000.01"]);
      await sql.end();
    } finally {
      await second.stop();
    }
  }, 120_000);

  it("starts nats-server with JetStream when nothing answers at the NATS URL", async () => {
    const nats = await ensureNats(scratch(), "nats://127.0.0.1:1");
    try {
      expect(nats.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
      expect(nats.url).not.toBe("nats://127.0.0.1:1");
      const { connectNats } = await import("@gw/events");
      const { nc, jsm } = await connectNats(nats.url, "infra-test");
      const info = await jsm.getAccountInfo();
      expect(info.limits).toBeDefined();
      await nc.close();
    } finally {
      await nats.stop();
    }
  }, 60_000);
});
