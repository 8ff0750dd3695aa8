import { fileURLToPath } from "node:url";
import { type Balancer, startBalancer } from "./balancer.ts";
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
import { type ProcessExit, Supervisor, type SupervisorOutput } from "./supervisor.ts";

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
  /**
   * Processes per service (default 1). Above 1, each replica listens on free ports of
   * its own and a TCP round-robin balancer takes the service's port in `ports`, so every
   * address the services and clients use stays the same. The balancer works per
   * connection: a gRPC client's one HTTP/2 connection stays on one replica.
   */
  replicas?: number;
}

/** One process of a service: the service itself, or `<service>#<n>` among replicas. */
export interface Instance {
  name: string;
  service: string;
  port: number;
  metricsPort: number;
}

export interface Stack {
  urls: StackUrls;
  /** The services started; those whose code is not in the tree yet are left out. */
  services: ServiceSpec[];
  missing: string[];
  /** Resolves when every started service reports ready; names the ones that did not. */
  waitReady(names?: string[], timeoutMs?: number): Promise<void>;
  /**
   * Kills a service, every replica of it (SIGKILL by default), or one replica by its
   * instance name (`operations#2`), and keeps it down until `restart`.
   */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed service (or replica) again and waits until it is ready. */
  restart(name: string): Promise<void>;
  /** The process id of a replica, or of a service's first one. */
  pid(name: string): number | undefined;
  /** Every process of the stack (one per service, or one per replica), once started. */
  instances(): Promise<Instance[]>;
  /** Processes per service. */
  replicas: number;
  /** Every process exit nobody asked for (a crash the supervisor restarted), oldest first. */
  unexpectedExits(): readonly ProcessExit[];
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
  const replicas = Math.max(1, Math.floor(options.replicas ?? 1));
  const byInstance = new Map<string, Instance>();
  const supervisor = new Supervisor({
    root,
    env: (spec, instance) => {
      const own = byInstance.get(instance)!;
      const ports: Record<string, string> =
        spec.readiness === "grpc"
          ? { GRPC_PORT: String(own.port) }
          : { PORT: String(own.port), HTTP_PORT: String(own.port) };
      return {
        ...serviceEnv(spec, settings),
        ...options.extraEnv,
        ...ports,
        METRICS_PORT: String(own.metricsPort),
      };
    },
    output: options.output,
  });
  const balancers: Balancer[] = [];

  // Replicas need ports of their own, found asynchronously; a single process per service
  // takes the plan's ports, as before.
  const started = (async () => {
    for (const s of services) {
      const planned = settings.ports[s.name]!;
      if (replicas === 1) {
        byInstance.set(s.name, { name: s.name, service: s.name, ...planned });
        continue;
      }
      for (let i = 1; i <= replicas; i++) {
        const name = `${s.name}#${i}`;
        byInstance.set(name, {
          name,
          service: s.name,
          port: await freePort(),
          metricsPort: await freePort(),
        });
      }
    }
    if (replicas > 1) {
      for (const s of services) {
        const backends = [...byInstance.values()].filter((i) => i.service === s.name).map((i) => i.port);
        balancers.push(await startBalancer(settings.ports[s.name]!.port, backends));
      }
    }
    for (const instance of byInstance.values())
      supervisor.start(services.find((s) => s.name === instance.service)!, instance.name);
  })();
  // A failure surfaces in waitReady; this keeps it from being an unhandled rejection first.
  started.catch(() => {});

  /** The instances a name stands for: a service's replicas, or one instance. */
  const resolve = (name: string): Instance[] => {
    const one = byInstance.get(name);
    if (one) return [one];
    const all = [...byInstance.values()].filter((i) => i.service === name);
    if (all.length === 0) throw new Error(`no service named ${name} in this stack`);
    return all;
  };
  const checks = new Map<string, () => Promise<boolean>>();
  const checkOf = (i: Instance) => {
    let check = checks.get(i.name);
    if (!check) {
      const spec = services.find((s) => s.name === i.service)!;
      check = readinessCheck(spec.readiness, `http://127.0.0.1:${i.port}`);
      checks.set(i.name, check);
    }
    return check;
  };
  const waitReady = async (
    names = services.map((s) => s.name),
    timeoutMs = options.readyTimeoutMs ?? 90_000,
  ) => {
    await started;
    const pending = new Set(names.flatMap((n) => resolve(n).map((i) => i.name)));
    try {
      await waitFor(
        "services to be ready",
        async () => {
          for (const name of [...pending])
            if (await checkOf(byInstance.get(name)!)().catch(() => false)) pending.delete(name);
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
    replicas,
    waitReady,
    async kill(name, signal) {
      await started;
      await Promise.all(resolve(name).map((i) => supervisor.kill(i.name, signal)));
    },
    async restart(name) {
      await started;
      for (const i of resolve(name)) supervisor.start(services.find((s) => s.name === i.service)!, i.name);
      await waitReady([name]);
    },
    pid: (name) => {
      const one = byInstance.get(name) ?? [...byInstance.values()].find((i) => i.service === name);
      return one ? supervisor.pid(one.name) : undefined;
    },
    instances: async () => {
      await started;
      return [...byInstance.values()];
    },
    unexpectedExits: () => supervisor.unexpectedExits(),
    async stop() {
      await started.catch(() => {});
      await supervisor.stop();
      await Promise.all(balancers.map((b) => b.close()));
    },
  };
}
