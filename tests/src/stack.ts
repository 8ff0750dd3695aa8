import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase } from "@gw/db";
import { connectNats, streamName } from "@gw/events";
import { ensureNats } from "@gw/stack/infra";
import { type ProvisionedShop, provisionShop } from "@gw/stack/provision";
import type { StackUrls } from "@gw/stack/services";
import { freePorts, type Instance, REPO_ROOT, type Stack, startStack } from "@gw/stack/stack";
import type { ProcessExit } from "@gw/stack/supervisor";

export interface TestStack {
  urls: StackUrls;
  adminToken: string;
  /** The stack's `RECEIPT_URL_SECRET`, so a test can make a genuine link that has expired. */
  receiptUrlSecret: string;
  eventsPrefix: string;
  databaseUrl: string;
  /** Every line every service printed, prefixed with its name. */
  logFile: string;
  /**
   * Kills one service, all its replicas (SIGKILL by default), or one replica by its
   * instance name (`edge#2`); it stays down until `restart`.
   */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed service again and waits until it is ready. */
  restart(name: string): Promise<void>;
  pid(name: string): number | undefined;
  /** Resolves when every process (or the named services or instances) answers ready again. */
  waitReady(timeoutMs?: number, names?: string[]): Promise<void>;
  /** Every process of the stack with its own ports. */
  instances(): Promise<Instance[]>;
  replicas: number;
  /**
   * A merchant, shop, key, sandbox provider, routes and pricing on this stack
   * (`provisionShop`); webhooks go to `webhookUrl` (a closed port when not given).
   */
  provisionShop(options: { name: string; webhookUrl?: string }): Promise<ProvisionedShop>;
  /**
   * Every process exit so far that neither `kill`, `stop` nor `excuseExit` caused: a
   * crash the supervisor hid by restarting the process.
   */
  unexpectedExits(): ProcessExit[];
  /** The process `pid` is about to be killed by the caller itself (a fault it injects). */
  excuseExit(pid: number): void;
  /**
   * Stops the stack and drops its database; then throws UnexpectedExitsError when any
   * process exited unexpectedly, so a suite passes only if nothing crashed.
   */
  stop(): Promise<void>;
}

/** Processes of a test stack exited without being asked to (issue 17). */
export class UnexpectedExitsError extends Error {
  readonly exits: ProcessExit[];
  constructor(exits: ProcessExit[], logFile: string) {
    super(
      `${exits.length} unexpected process exit(s):\n${exits.map(describeExit).join("\n")}\nservice output: ${logFile}`,
    );
    this.name = "UnexpectedExitsError";
    this.exits = exits;
  }
}

/**
 * Stops a stack and prints how many of its processes exited unexpectedly, with each
 * one's last stderr lines; answers that count. For scripts (load, faults), which report
 * rather than throw.
 */
export async function stopAndReportExits(stack: TestStack, print: (line: string) => void): Promise<number> {
  let exits = stack.unexpectedExits();
  try {
    await stack.stop();
  } catch (err) {
    if (!(err instanceof UnexpectedExitsError)) throw err;
    exits = err.exits;
  }
  print(`\nunexpected process exits: ${exits.length}`);
  for (const exit of exits) print(describeExit(exit));
  return exits.length;
}

/** One exit as a line for a person, with the last lines of its stderr below it. */
export function describeExit(exit: ProcessExit): string {
  const how = exit.signal ?? `code ${exit.code}`;
  const tail = exit.stderrTail.map((l) => `    ${l}`).join("\n");
  return `  ${exit.instance} (pid ${exit.pid}) exited with ${how} at ${exit.at.toISOString()}${tail ? `:\n${tail}` : ""}`;
}

/** Settings that make a test stack quick to recover: short retry delays everywhere. */
const TEST_ENV: Record<string, string> = {
  // Eight services per stack, and CI runs a stack beside integration tests on a Postgres
  // with 100 connections: small pools keep every run under the limit.
  DB_POOL_MAX: "4",
  WEBHOOK_RETRY_SCHEDULE_MS: "250,500,1000,2000,2000,2000,2000,2000,2000,2000",
  WEBHOOK_POLL_MS: "200",
  CALLBACK_RETRY_BASE_MS: "250",
  CALLBACK_RETRY_MAX_MS: "2000",
  CALLBACK_POLL_MS: "200",
};

/**
 * Boots the whole gateway as separate processes, as `pnpm stack` does, on free ports,
 * with a fresh database and its own events prefix, and waits until every service is
 * ready. Service output goes to a log file under `test-results/e2e/`, whose tail is
 * thrown with the error when the stack does not come up.
 */
export async function startTestStack(
  options: {
    extraEnv?: Record<string, string>;
    /** Processes per service behind a balancer each; defaults to `E2E_REPLICAS` or 1. */
    replicas?: number;
    /** Postgres and NATS to use instead of a fresh database and the machine's NATS. */
    infra?: { databaseUrl: string; natsUrl: string };
  } = {},
): Promise<TestStack> {
  const replicas = options.replicas ?? Number(process.env.E2E_REPLICAS ?? 1);
  const eventsPrefix = `t_${randomBytes(5).toString("hex")}`;
  const database = options.infra
    ? { url: options.infra.databaseUrl, drop: async () => {} }
    : await createTestDatabase();
  // Used only when no NATS answers and the harness starts its own nats-server.
  const natsDir = mkdtempSync(join(tmpdir(), "gw-e2e-"));
  const nats = options.infra
    ? { url: options.infra.natsUrl, stop: async () => {} }
    : await ensureNats(natsDir, process.env.NATS_URL);
  const adminToken = randomBytes(32).toString("base64url");
  const receiptUrlSecret = randomBytes(32).toString("base64url");
  const logDir = join(REPO_ROOT, "test-results", "e2e");
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `${eventsPrefix}.log`);
  const log = createWriteStream(logFile);
  const tail: string[] = [];
  const write = (line: string) => {
    // The supervisor reports an exit a moment after it (with the stderr drained), which
    // may fall after stop() ended the log: a write then would throw in an event handler.
    if (!log.writableEnded) log.write(`${line}\n`);
    tail.push(line);
    if (tail.length > 60) tail.shift();
  };

  const stack: Stack = startStack({
    databaseUrl: database.url,
    natsUrl: nats.url,
    eventsPrefix,
    adminToken,
    receiptUrlSecret,
    flexibleLinkSecret: randomBytes(32).toString("base64url"),
    logLevel: process.env.E2E_LOG_LEVEL ?? "info",
    ports: await freePorts(),
    output: {
      line: (service, text) => write(`[${service}] ${text}`),
      notice: (text) => write(`[stack] ${text}`),
      error: (text) => write(`[stack] ERROR ${text}`),
    },
    readyTimeoutMs: replicas > 1 ? 240_000 : 120_000,
    replicas,
    // Replicas: 3 × 8 processes share one Postgres of 100 connections.
    extraEnv: { ...TEST_ENV, ...(replicas > 1 ? { DB_POOL_MAX: "2" } : {}), ...options.extraEnv },
  });

  const excused = new Set<number>();
  const unexpectedExits = () =>
    stack.unexpectedExits().filter((e) => e.pid === undefined || !excused.has(e.pid));
  const stopStack = async () => {
    await stack.stop();
    await new Promise((r) => log.end(r));
    if (!options.infra) {
      const { nc, jsm } = await connectNats(nats.url, "e2e-cleanup");
      await jsm.streams.delete(streamName(eventsPrefix)).catch(() => false);
      await nc.close();
    }
    await nats.stop();
    rmSync(natsDir, { recursive: true, force: true });
    await database.drop();
  };
  const stop = async () => {
    await stopStack();
    const exits = unexpectedExits();
    if (exits.length > 0) throw new UnexpectedExitsError(exits, logFile);
  };

  try {
    if (stack.missing.length > 0) throw new Error(`services not in the tree: ${stack.missing.join(", ")}`);
    await stack.waitReady();
  } catch (err) {
    await stopStack().catch(() => {});
    throw new Error(`${(err as Error).message}\nlast service output (${logFile}):\n${tail.join("\n")}`);
  }

  return {
    urls: stack.urls,
    adminToken,
    receiptUrlSecret,
    eventsPrefix,
    databaseUrl: database.url,
    logFile,
    kill: (name, signal) => stack.kill(name, signal),
    restart: (name) => stack.restart(name),
    pid: (name) => stack.pid(name),
    waitReady: (timeoutMs, names) => stack.waitReady(names, timeoutMs),
    instances: () => stack.instances(),
    replicas,
    provisionShop: ({ name, webhookUrl = "http://127.0.0.1:9/unused" }) =>
      provisionShop({
        edgeUrl: stack.urls.edge,
        sandboxUrl: stack.urls.sandbox,
        adminToken,
        webhookUrl,
        name,
      }),
    unexpectedExits,
    excuseExit: (pid) => excused.add(pid),
    stop,
  };
}
