import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Counter, Registry } from "prom-client";
import { restartCounter, stackMetricsRegistry } from "./metrics.ts";
import { type ServiceSpec, serviceMain } from "./services.ts";

/** Where the supervisor sends a child's output lines and its own notices. */
export interface SupervisorOutput {
  line(service: string, text: string): void;
  notice(text: string): void;
  /** Something is wrong: a process exited without being asked to. */
  error(text: string): void;
}

/** A process that exited without being asked to (no `kill`, no `stop`): a crash. */
export interface ProcessExit {
  instance: string;
  service: string;
  pid: number | undefined;
  /** The exit code, or null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the process wrote to stderr, oldest first. */
  stderrTail: string[];
  at: Date;
}

/** How many of a process's last stderr lines an unexpected exit reports. */
export const STDERR_TAIL_LINES = 20;

export interface SupervisorOptions {
  /** The repository root; services are `services/<name>/src/main.ts` under it. */
  root: string;
  /** The environment of one process; `instance` is the name given to `start`. */
  env: (spec: ServiceSpec, instance: string) => Record<string, string>;
  output: SupervisorOutput;
  /** First restart delay; it doubles up to `maxBackoffMs`, and resets after a long run. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Where the restart counter goes (default: the runner's registry of metrics.ts). */
  registry?: Registry;
}

interface Child {
  spec: ServiceSpec;
  /** The name this process goes by: the service's, or `<service>#<n>` for a replica. */
  instance: string;
  process?: ChildProcess;
  exited?: Promise<void>;
  /** Set while the child is meant to stay down (stopping, or held by a fault test). */
  held: boolean;
  failures: number;
  startedAt: number;
  /** The last lines of the current process's stderr. */
  stderr: string[];
  timer?: NodeJS.Timeout;
}

/**
 * Children still running when this process exits (a crash, a test runner killed) get
 * SIGKILL, so no service is left behind holding ports and connections.
 */
const alive = new Set<ChildProcess>();
process.once("exit", () => {
  for (const p of alive) p.kill("SIGKILL");
});

/** A run of this long counts as healthy: the next crash restarts after the first delay again. */
const HEALTHY_RUN_MS = 30_000;

/**
 * Runs each service as its own child process (`node services/<name>/src/main.ts`),
 * forwards its output line by line, and restarts a child that dies with a growing
 * delay. `stop()` sends SIGTERM to all and SIGKILL to those still up after the grace.
 *
 * A restart hides a crash from anyone who only looks at whether the stack answers, so
 * every exit nobody asked for is reported as an error (with its code and the last
 * lines of stderr), kept in `unexpectedExits()` for suites to fail on, and counted in
 * `stack_process_restarts_total` (issue 17).
 */
export class Supervisor {
  readonly #o: Required<Omit<SupervisorOptions, "registry">>;
  readonly #children = new Map<string, Child>();
  readonly #exits: ProcessExit[] = [];
  readonly #restarts: Counter<"service" | "instance">;

  constructor(options: SupervisorOptions) {
    this.#o = { backoffMs: 500, maxBackoffMs: 15_000, ...options };
    this.#restarts = restartCounter(options.registry ?? stackMetricsRegistry);
  }

  /** Every exit so far that nobody asked for, oldest first. */
  unexpectedExits(): readonly ProcessExit[] {
    return this.#exits;
  }

  /**
   * Starts a service (again, after `kill`), and keeps it running. `instance` names one
   * of several processes of the same service (replicas); it defaults to the service's name.
   */
  start(spec: ServiceSpec, instance = spec.name): void {
    let child = this.#children.get(instance);
    if (!child) {
      child = { spec, instance, held: false, failures: 0, startedAt: 0, stderr: [] };
      this.#children.set(instance, child);
    }
    child.held = false;
    if (!child.process) this.#spawn(child);
  }

  /** Process id of a running service, or undefined while it is down. */
  pid(name: string): number | undefined {
    return this.#children.get(name)?.process?.pid;
  }

  /**
   * Kills one service with `signal` (SIGKILL by default) and keeps it down until
   * `start` is called again. Resolves once the process has exited.
   */
  async kill(name: string, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const child = this.#children.get(name);
    if (!child) throw new Error(`no service named ${name}`);
    child.held = true;
    clearTimeout(child.timer);
    if (!child.process) return;
    const exited = child.exited;
    child.process.kill(signal);
    await exited;
  }

  /** Stops every service, the last started first, each with SIGTERM and then SIGKILL. */
  async stop(graceMs = 20_000): Promise<void> {
    const children = [...this.#children.values()].reverse();
    for (const c of children) {
      c.held = true;
      clearTimeout(c.timer);
    }
    await Promise.all(
      children.map(async (c) => {
        if (!c.process) return;
        const exited = c.exited;
        c.process.kill("SIGTERM");
        const hard = setTimeout(() => c.process?.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(hard);
      }),
    );
  }

  #spawn(child: Child): void {
    const { spec, instance } = child;
    const { output } = this.#o;
    const env: Record<string, string> = {};
    // The runner's own environment passes through (PATH, locale), but not the test
    // runner's markers, so a service behaves the same under `pnpm stack` and in e2e.
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !k.startsWith("VITEST")) env[k] = v;
    const proc = spawn(process.execPath, [serviceMain(this.#o.root, spec.name)], {
      cwd: this.#o.root,
      env: { ...env, ...this.#o.env(spec, instance) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.process = proc;
    child.startedAt = Date.now();
    const stderr: string[] = [];
    child.stderr = stderr;
    alive.add(proc);
    createInterface({ input: proc.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (l) =>
      output.line(instance, l),
    );
    // Lines wait for the pipe to drain, which happens after "exit": "close" has them all.
    const drained = new Promise<void>((resolve) => proc.once("close", () => resolve()));
    createInterface({ input: proc.stderr, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (l) => {
      stderr.push(l);
      if (stderr.length > STDERR_TAIL_LINES) stderr.shift();
      output.line(instance, l);
    });
    child.exited = new Promise<void>((resolve) => {
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        alive.delete(proc);
        if (child.process !== proc) return;
        child.process = undefined;
        resolve();
        if (child.held) return;
        if (Date.now() - child.startedAt > HEALTHY_RUN_MS) child.failures = 0;
        const delay = Math.min(this.#o.backoffMs * 2 ** child.failures, this.#o.maxBackoffMs);
        child.failures++;
        const exit: ProcessExit = {
          instance,
          service: spec.name,
          pid: proc.pid,
          code,
          signal,
          stderrTail: stderr,
          at: new Date(),
        };
        this.#exits.push(exit);
        // The report waits (briefly) for the last stderr lines, which hold the cause.
        void Promise.race([drained, new Promise((r) => setTimeout(r, 1_000).unref())]).then(() =>
          output.error(
            `${instance} exited unexpectedly (${signal ?? `code ${code}`}); restarting in ${delay} ms; ` +
              (stderr.length === 0
                ? "nothing on its stderr"
                : `last ${stderr.length} line(s) of its stderr:\n${stderr.map((l) => `  ${l}`).join("\n")}`),
          ),
        );
        child.timer = setTimeout(() => {
          if (child.held || child.process) return;
          this.#restarts.inc({ service: spec.name, instance });
          this.#spawn(child);
        }, delay);
      };
      // A spawn that fails (no such executable) emits "error" and never "exit".
      proc.once("error", (err) => {
        output.notice(`${instance} could not start: ${err.message}`);
        if (proc.pid === undefined) onExit(null, null);
      });
      proc.once("exit", onExit);
    });
  }
}
