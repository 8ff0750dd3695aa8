import { execFile, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// scripts/system.sh under GW_DRY_RUN=1: what `./gw test` would install and start, on
// ports and paths of the test's own, so the machine's real servers are neither used nor
// touched. A real install (apt-get) is left to a fresh machine: see the report.
const SYSTEM_SH = fileURLToPath(new URL("./system.sh", import.meta.url));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A TCP server on a free port that greets each connection with `greeting` (a NATS server sends INFO). */
async function listener(greeting = ""): Promise<number> {
  const server: Server = createServer((socket) => {
    // bash's probe opens and closes at once, which can reset the socket before the
    // greeting is written: that is the probe's business, not an error of the test.
    socket.on("error", () => {});
    socket.end(greeting);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

/** A free port nobody listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-system-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A PATH with only the basic tools the script uses: no pg_ctlcluster, nats-server or chromium. */
function barePath(): string {
  const bin = tempDir();
  for (const tool of ["id", "ls", "sort", "tail", "seq", "sleep", "pgrep", "sed", "cat"]) {
    const found = spawnSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
    if (found) symlinkSync(found, join(bin, tool));
  }
  return bin;
}

/**
 * Runs `ensure_test_system` in bash under GW_DRY_RUN=1, asynchronously: the stand-in
 * servers above live in this process and must go on answering while bash waits on them.
 */
function ensureTestSystem(env: Record<string, string>) {
  return new Promise<{ status: number | null; planned: string[]; stderr: string }>((resolve, reject) => {
    execFile(
      "/bin/bash",
      ["-c", `source "${SYSTEM_SH}" && ensure_test_system`],
      { encoding: "utf8", env: { GW_DRY_RUN: "1", PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") return reject(error);
        resolve({
          status: error ? (error.code as number) : 0,
          planned: stdout.trim().split("\n").filter(Boolean),
          stderr,
        });
      },
    );
  });
}

describe("./gw test's system set-up (scripts/system.sh)", () => {
  it("does nothing when Postgres, NATS with JetStream and Chromium are all there", async () => {
    const chromium = join(tempDir(), "chromium");
    writeFileSync(chromium, "#!/bin/sh\n");
    chmodSync(chromium, 0o755);
    const run = await ensureTestSystem({
      GW_PG_PORT: String(await listener()),
      GW_NATS_PORT: String(await listener('INFO {"server_id":"x","jetstream":true}\r\n')),
      GW_CHROMIUM: chromium,
    });
    expect(run).toMatchObject({ status: 0, planned: [] });
  });

  it("installs, configures and starts all three on a bare machine, with one apt-get update", async () => {
    const run = await ensureTestSystem({
      PATH: barePath(),
      GW_PG_PORT: String(await closedPort()),
      GW_NATS_PORT: String(await closedPort()),
      GW_CHROMIUM: join(tempDir(), "no-chromium"),
      GW_SBIN: tempDir(),
    });
    expect(run.status).toBe(0);
    const install = (what: string) =>
      `would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${what}`;
    expect(run.planned[0]).toBe("would run: apt-get update -qq");
    expect(run.planned.filter((line) => line.includes("apt-get update"))).toHaveLength(1);
    expect(run.planned).toContain(install("postgresql"));
    expect(run.planned.find((line) => line.includes("pg_hba.conf"))).toContain("trust");
    expect(run.planned.find((line) => line.includes("pg_ctlcluster"))).toMatch(/main start$/);
    expect(run.planned).toContain(install("nats-server"));
    expect(run.planned.find((line) => line.includes("start-stop-daemon"))).toMatch(/ -js /);
    expect(run.planned.at(-1)).toBe(install("chromium"));
  });

  it("refuses a NATS server that runs without JetStream instead of running the tests against it", async () => {
    const run = await ensureTestSystem({
      GW_PG_PORT: String(await listener()),
      GW_NATS_PORT: String(await listener('INFO {"server_id":"x"}\r\n')),
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("without JetStream");
    expect(run.planned).toEqual([]);
  });

  it("leaves Postgres to the tests when TEST_DATABASE_URL names another server", async () => {
    const chromium = join(tempDir(), "chromium");
    writeFileSync(chromium, "#!/bin/sh\n");
    chmodSync(chromium, 0o755);
    const run = await ensureTestSystem({
      PATH: barePath(),
      GW_PG_PORT: String(await closedPort()),
      GW_NATS_PORT: String(await listener('INFO {"server_id":"x","jetstream":true}\r\n')),
      GW_CHROMIUM: chromium,
      TEST_DATABASE_URL: "postgres://postgres@db.example:5432/postgres",
    });
    expect(run).toMatchObject({ status: 0, planned: [] });
  });
});
