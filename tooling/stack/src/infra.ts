import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { loadEmbeddedPostgres, reachableDataDir } from "./embedded-postgres.ts";
import { freePort, probeTcp, waitFor } from "./net.ts";

/** A piece of infrastructure the runner found or started; `stop` is a no-op when found. */
export interface Infra {
  url: string;
  /** What the runner did, for the one line it prints. */
  origin: string;
  stop(): Promise<void>;
  /**
   * Only for a Postgres this runner started: an immediate shutdown (SIGQUIT to the
   * postmaster, no checkpoint, as a crash) and a start again on the same port and data.
   */
  restartImmediately?(): Promise<void>;
}

/**
 * Finds Postgres: DATABASE_URL when given, else a server at 127.0.0.1:5432, else an
 * embedded real Postgres (binaries from the `embedded-postgres` package) with its data
 * in `<dataDir>/postgres` on a free port. Makes sure the database of the URL exists.
 */
export async function ensurePostgres(
  dataDir: string,
  databaseUrl?: string,
  database = "gateway",
): Promise<Infra> {
  if (databaseUrl) {
    await createDatabaseIfMissing(databaseUrl);
    return { url: databaseUrl, origin: "DATABASE_URL", stop: async () => {} };
  }
  if (await probeTcp("127.0.0.1", 5432)) {
    const url = `postgres://postgres@127.0.0.1:5432/${database}`;
    await createDatabaseIfMissing(url);
    return { url, origin: "the Postgres at 127.0.0.1:5432", stop: async () => {} };
  }
  return startEmbeddedPostgres(join(dataDir, "postgres"), database);
}

/**
 * Starts a real Postgres from the binaries of the `embedded-postgres` package, with its
 * data in `dir` (initialised on first use) on a free port, and creates `database`.
 */
export async function startEmbeddedPostgres(
  wanted: string,
  database: string,
  options: {
    port?: number;
    postgresFlags?: string[];
    /** Where the package is and where a reachable copy goes (tests); see ./embedded-postgres.ts. */
    embedded?: Parameters<typeof loadEmbeddedPostgres>[0];
  } = {},
): Promise<Infra> {
  const { EmbeddedPostgres } = await loadEmbeddedPostgres(options.embedded);
  const dir = reachableDataDir(wanted, options.embedded?.cacheDir);
  const port = options.port ?? (await freePort());
  const password = "gateway";
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "postgres",
    password,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    ...(options.postgresFlags ? { postgresFlags: options.postgresFlags } : {}),
    onLog: () => {},
    onError: (e) => console.error("[postgres]", e instanceof Error ? e.message : String(e)),
  });
  if (!existsSync(join(dir, "PG_VERSION"))) await pg.initialise();
  await pg.start();
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  await createDatabaseIfMissing(url);
  return {
    url,
    origin:
      dir === wanted
        ? `an embedded Postgres in ${dir}`
        : `an embedded Postgres in ${dir} (the postgres user cannot reach ${wanted})`,
    stop: () => pg.stop(),
    async restartImmediately() {
      const postmaster = Number(readFileSync(join(dir, "postmaster.pid"), "utf8").split("\n")[0]);
      process.kill(postmaster, "SIGQUIT");
      await waitFor("postgres to go down", async () => !(await probeTcp("127.0.0.1", port)), 30_000, 50);
      await waitFor(
        "postgres to release its pid file",
        async () => !existsSync(join(dir, "postmaster.pid")),
        30_000,
        50,
      ).catch(() => {});
      await pg.start();
    },
  };
}

/** Creates the database named in `url` when the server does not have it yet. */
export async function createDatabaseIfMissing(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new Error(`unexpected database name in DATABASE_URL: ${name}`);
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) await sql.unsafe(`create database "${name}"`);
  } finally {
    await sql.end();
  }
}

/**
 * Finds NATS with JetStream: NATS_URL (default nats://127.0.0.1:4222) when something
 * answers there, else a `nats-server -js` from PATH on a free port with its store in
 * `<dataDir>/nats`. Throws one line saying how to get a server when there is none.
 */
export async function ensureNats(dataDir: string, natsUrl = "nats://127.0.0.1:4222"): Promise<Infra> {
  const given = new URL(natsUrl.replace(/^nats:/, "http:"));
  if (await probeTcp(given.hostname, Number(given.port || 4222))) {
    return { url: natsUrl, origin: natsUrl, stop: async () => {} };
  }
  const port = await freePort();
  const store = join(dataDir, "nats");
  mkdirSync(store, { recursive: true });
  const child = spawn("nats-server", ["-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  const failed = await Promise.race([
    spawnError,
    waitFor("nats-server", () => probeTcp("127.0.0.1", port), 10_000).then(() => undefined),
  ]);
  if (failed) {
    throw new Error(
      `no NATS answers at ${natsUrl} and nats-server is not on PATH: install it (apt-get install nats-server) or set NATS_URL`,
    );
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    origin: `nats-server with its store in ${store}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
