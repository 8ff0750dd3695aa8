import { fileURLToPath } from "node:url";
import { freePort, waitFor } from "./net.ts";
import { readinessCheck } from "./ready.ts";
import {
  type PortPlan,
  SERVICES,
  type ServiceSpec,
  type StackSettings,
  type StackUrls,
  serviceEnv,
  serviceExists,
  stackUrls,
} from "./services.ts";
import { Supervisor, type SupervisorOutput } from "./supervisor.ts";

/** The repository root, from this file's place in it. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The ports of docs/architecture.md, for `pnpm stack`. */
export function defaultPorts(): PortPlan {
  return Object.fromEntries(SERVICES.map((s) => [s.name, { port: s.port, metricsPort: s.metricsPort }]));
}

/** Free ports for every service, so test stacks run beside a developer's stack. */
export async function freePorts(): Promise<PortPlan> {
  const plan: PortPlan = {};
  for (const s of SERVICES) plan[s.name] = { port: await freePort(), metricsPort: await freePort() };
  return plan;
}

export interface StackOptions extends Omit<StackSettings, "logLevel"> {
  logLevel?: string;
  output: SupervisorOutput;
  root?: string;
  /** How long `waitReady` waits for every service. */
  readyTimeoutMs?: number;
  /** More settings for every service (a test's shorter retry delays, say). */
  extraEnv?: Record<string, string>;
}

export interface Stack {
  urls: StackUrls;
  /** The services started; those whose code is not in the tree yet are left out. */
  services: ServiceSpec[];
  missing: string[];
  /** Resolves when every started service reports ready; names the ones that did not. */
  waitReady(names?: string[], timeoutMs?: number): Promise<void>;
  /** Kills one service (SIGKILL by default) and keeps it down until `restart`. */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed service again and waits until it is ready. */
  restart(name: string): Promise<void>;
  pid(name: string): number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts every service of the gateway as its own process with one consistent set of
 * settings. Postgres and NATS must already be there (`infra.ts` finds or starts them).
 */
export function startStack(options: StackOptions): Stack {
  const root = options.root ?? REPO_ROOT;
  const settings: StackSettings = { ...options, logLevel: options.logLevel ?? "info" };
  const urls = stackUrls(settings.ports);
  const services = SERVICES.filter((s) => serviceExists(root, s.name));
  const missing = SERVICES.filter((s) => !serviceExists(root, s.name)).map((s) => s.name);
  const supervisor = new Supervisor({
    root,
    env: (spec) => ({ ...serviceEnv(spec, settings), ...options.extraEnv }),
    output: options.output,
  });
  for (const spec of services) supervisor.start(spec);

  const checks = new Map(
    services.map((s) => [
      s.name,
      readinessCheck(s.readiness, `http://127.0.0.1:${settings.ports[s.name]!.port}`),
    ]),
  );
  const waitReady = async (
    names = services.map((s) => s.name),
    timeoutMs = options.readyTimeoutMs ?? 90_000,
  ) => {
    const pending = new Set(names);
    try {
      await waitFor(
        "services to be ready",
        async () => {
          for (const name of [...pending])
            if (await checks.get(name)!().catch(() => false)) pending.delete(name);
          return pending.size === 0;
        },
        timeoutMs,
        250,
      );
    } catch {
      throw new Error(`not ready after ${timeoutMs} ms: ${[...pending].join(", ")}`);
    }
  };

  return {
    urls,
    services,
    missing,
    waitReady,
    kill: (name, signal) => supervisor.kill(name, signal),
    async restart(name) {
      const spec = services.find((s) => s.name === name);
      if (!spec) throw new Error(`no service named ${name} in this stack`);
      supervisor.start(spec);
      await waitReady([name]);
    },
    pid: (name) => supervisor.pid(name),
    stop: () => supervisor.stop(),
  };
}
