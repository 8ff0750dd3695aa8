import { execFile, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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

/**
 * A PATH with only the basic tools the script uses, as on a bare Debian: no pg_ctlcluster,
 * nats-server, chromium, npm, nor pgrep (procps is not installed there either); `present`
 * adds stand-ins for programs the case at hand has.
 */
function barePath(present: string[] = []): string {
  const bin = tempDir();
  for (const tool of ["id", "ls", "sort", "tail", "seq", "sleep", "sed", "cat", "mkdir", "dirname"]) {
    const found = spawnSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
    if (found) symlinkSync(found, join(bin, tool));
  }
  for (const tool of present) {
    writeFileSync(join(bin, tool), "#!/bin/sh\n");
    chmodSync(join(bin, tool), 0o755);
  }
  return bin;
}

/**
 * Runs `ensure_test_system` in bash under GW_DRY_RUN=1, asynchronously: the stand-in
 * servers above live in this process and must go on answering while bash waits on them.
 */
function ensureTestSystem(
  env: Record<string, string>,
  script = `source "${SYSTEM_SH}" && ensure_test_system`,
) {
  return new Promise<{ status: number | null; planned: string[]; stderr: string }>((resolve, reject) => {
    execFile(
      "/bin/bash",
      ["-c", script],
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
    expect(run.planned).toContain(install("npm"));
    expect(run.planned).toContain(install("postgresql"));
    expect(run.planned.find((line) => line.includes("pg_hba.conf"))).toContain("trust");
    expect(run.planned.find((line) => line.includes("pg_ctlcluster"))).toMatch(/main start$/);
    expect(run.planned).toContain(install("nats-server"));
    const natsStart = run.planned.find((line) => line.includes("start-stop-daemon"));
    expect(natsStart).toMatch(/ -js /);
    // Its own pidfile: a nats-server of another namespace or port (a container's, a
    // chroot's host) is not this port's server, so it must not make the start a no-op.
    expect(natsStart).toMatch(/ --pidfile \/run\/gw-nats-server\.pid --make-pidfile /);
    expect(run.planned.at(-1)).toBe(install("chromium"));
  });

  it("installs nats-server even when a NATS with JetStream answers: several tests start their own", async () => {
    const chromium = join(tempDir(), "chromium");
    writeFileSync(chromium, "#!/bin/sh\n");
    chmodSync(chromium, 0o755);
    const run = await ensureTestSystem({
      PATH: barePath(["npm"]),
      GW_PG_PORT: String(await listener()),
      GW_NATS_PORT: String(await listener('INFO {"server_id":"x","jetstream":true}\r\n')),
      GW_CHROMIUM: chromium,
      GW_SBIN: tempDir(),
    });
    expect(run).toMatchObject({
      status: 0,
      planned: [
        "would run: apt-get update -qq",
        "would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server",
      ],
    });
  });

  it("puts Debian's nats-server (in /usr/sbin) on PATH for the tests that start it", async () => {
    const sbin = tempDir();
    writeFileSync(join(sbin, "nats-server"), "#!/bin/sh\n");
    chmodSync(join(sbin, "nats-server"), 0o755);
    const run = await ensureTestSystem(
      { PATH: barePath(), GW_SBIN: sbin },
      `source "${SYSTEM_SH}" && ensure_nats_server && command -v nats-server`,
    );
    expect(run).toMatchObject({ status: 0, planned: [join(sbin, "nats-server")] });
  });

  it("./gw up: installs nats-server when no NATS answers (the stack starts one), nothing when one does", async () => {
    const up = `source "${SYSTEM_SH}" && ensure_stack_system`;
    const bare = await ensureTestSystem(
      { PATH: barePath(), GW_NATS_PORT: String(await closedPort()), GW_SBIN: tempDir() },
      up,
    );
    expect(bare).toMatchObject({
      status: 0,
      planned: [
        "would run: apt-get update -qq",
        "would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server",
      ],
    });
    const served = await ensureTestSystem(
      { PATH: barePath(), GW_NATS_PORT: String(await listener()), GW_SBIN: tempDir() },
      up,
    );
    expect(served).toMatchObject({ status: 0, planned: [] });
  });

  it("scripts/env.sh on a machine without npm installs Debian's npm before it fetches Node 24 with it", async () => {
    // A checkout of its own with no .tools/, so env.sh has Node to set up.
    const root = tempDir();
    mkdirSync(join(root, "scripts"));
    for (const file of ["env.sh", "system.sh"])
      copyFileSync(join(dirname(SYSTEM_SH), file), join(root, "scripts", file));
    const run = await ensureTestSystem(
      { PATH: barePath() },
      `set -euo pipefail; source "${join(root, "scripts", "env.sh")}"`,
    );
    expect(run.planned).toEqual([
      "would run: apt-get update -qq",
      "would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm",
    ]);
    expect(run.stderr).toContain("installing npm");
    // Dry: npm was not really installed, so fetching Node stops there (under ./gw's set -e), naming npm.
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/npm: command not found/);
  });

  it("waits for a running apt-get or dpkg without pgrep (a bare Debian has no procps), from /proc", async () => {
    const proc = tempDir();
    const busy = (names: string[]) => {
      rmSync(proc, { recursive: true, force: true });
      names.forEach((name, i) => {
        mkdirSync(join(proc, String(100 + i)), { recursive: true });
        writeFileSync(join(proc, String(100 + i), "comm"), `${name}\n`);
      });
      return ensureTestSystem({ PATH: barePath(), GW_PROC: proc }, `source "${SYSTEM_SH}" && sys_apt_busy`);
    };
    expect((await busy(["bash", "dpkg"])).status).toBe(0);
    expect((await busy(["bash", "apt-get"])).status).toBe(0);
    expect((await busy(["bash", "node", "apt-listchanges"])).status).toBe(1);
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
      PATH: barePath(["npm", "nats-server"]),
      GW_PG_PORT: String(await closedPort()),
      GW_NATS_PORT: String(await listener('INFO {"server_id":"x","jetstream":true}\r\n')),
      GW_CHROMIUM: chromium,
      TEST_DATABASE_URL: "postgres://postgres@db.example:5432/postgres",
    });
    expect(run).toMatchObject({ status: 0, planned: [] });
  });
});
