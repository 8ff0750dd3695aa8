import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "./net.ts";
import type { ServiceSpec } from "./services.ts";
import { Supervisor } from "./supervisor.ts";

// A stand-in service: prints its name from the environment, then stays up until
// SIGTERM, or writes 30 numbered lines to stderr and exits with code 3 when CRASH is set.
const SERVICE = `
process.stdout.write("hello from " + process.env.WHO + "\\n");
if (process.env.CRASH) {
  for (let i = 1; i <= 30; i++) process.stderr.write("trace line " + i + "\\n");
  process.exit(3);
}
process.on("SIGTERM", () => { process.stdout.write("bye\\n"); process.exit(0); });
setInterval(() => {}, 1000);
`;

const roots: string[] = [];
function fakeRoot(name: string): string {
  const root = mkdtempSync(join(tmpdir(), "gw-supervisor-"));
  roots.push(root);
  mkdirSync(join(root, "services", name, "src"), { recursive: true });
  writeFileSync(join(root, "services", name, "src", "main.ts"), SERVICE);
  return root;
}

const spec: ServiceSpec = { name: "fake", readiness: "http", port: 0, metricsPort: 0 };

describe("Supervisor", () => {
  let supervisor: Supervisor | undefined;
  let registry: Registry;
  beforeEach(() => {
    registry = new Registry();
  });
  afterEach(async () => {
    await supervisor?.stop(2_000);
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  function start(env: Record<string, string>) {
    const lines: string[] = [];
    const notices: string[] = [];
    const errors: string[] = [];
    supervisor = new Supervisor({
      root: fakeRoot(spec.name),
      env: () => env,
      output: {
        line: (service, text) => lines.push(`[${service}] ${text}`),
        notice: (t) => notices.push(t),
        error: (t) => errors.push(t),
      },
      registry,
      backoffMs: 50,
      maxBackoffMs: 200,
    });
    supervisor.start(spec);
    return { lines, notices, errors, supervisor };
  }

  it("forwards each line of a service's output under its name, with the environment it was given", async () => {
    const { lines } = start({ WHO: "the runner" });
    await waitFor("the first line", async () => lines.length > 0, 10_000);
    expect(lines[0]).toBe("[fake] hello from the runner");
  });

  it("restarts a service that dies, and says so", async () => {
    const { lines, errors } = start({ WHO: "x", CRASH: "1" });
    await waitFor("three starts", async () => lines.filter((l) => l.includes("hello")).length >= 3, 20_000);
    expect(errors[0]).toMatch(/^fake exited unexpectedly \(code 3\); restarting in 50 ms/);
    expect(errors[1]).toMatch(/restarting in 100 ms/);
  });

  it("logs an unexpected exit as an error with its exit code and the last lines of its stderr", async () => {
    const { errors, supervisor } = start({ WHO: "x", CRASH: "1" });
    await waitFor("an exit", async () => errors.length > 0, 20_000);
    expect(errors[0]).toMatch(/\(code 3\)/);
    expect(errors[0]).toContain("trace line 30");
    expect(errors[0]).toContain("trace line 11");
    expect(errors[0]).not.toContain("trace line 10\n");
    const [exit] = supervisor.unexpectedExits();
    expect(exit).toMatchObject({ instance: "fake", service: "fake", code: 3, signal: null });
    expect(exit?.stderrTail).toHaveLength(20);
    expect(exit?.stderrTail.at(-1)).toBe("trace line 30");
  });

  it("counts each restart after an unexpected exit in the restart metric", async () => {
    const { lines } = start({ WHO: "x", CRASH: "1" });
    await waitFor("three starts", async () => lines.filter((l) => l.includes("hello")).length >= 3, 20_000);
    const text = await registry.metrics();
    const restarts = Number(
      /stack_process_restarts_total\{service="fake",instance="fake"\} (\d+)/.exec(text)?.[1],
    );
    expect(restarts).toBeGreaterThanOrEqual(2);
  });

  it("does not count the exits it was asked for (kill, stop) as unexpected", async () => {
    const { lines, errors, supervisor } = start({ WHO: "x" });
    await waitFor("the service", async () => lines.length > 0, 10_000);
    await supervisor.kill("fake");
    supervisor.start(spec);
    await waitFor("the second start", async () => lines.length > 1, 10_000);
    await supervisor.stop(5_000);
    expect(supervisor.unexpectedExits()).toEqual([]);
    expect(errors).toEqual([]);
    expect(await registry.metrics()).not.toMatch(/stack_process_restarts_total\{/);
  });

  it("keeps a killed service down until it is started again, then runs a new process", async () => {
    const { lines, supervisor } = start({ WHO: "x" });
    await waitFor("the service", async () => lines.length > 0, 10_000);
    const first = supervisor.pid("fake");
    await supervisor.kill("fake");
    expect(supervisor.pid("fake")).toBeUndefined();
    supervisor.start(spec);
    await waitFor("the second start", async () => lines.length > 1, 10_000);
    expect(supervisor.pid("fake")).toBeDefined();
    expect(supervisor.pid("fake")).not.toBe(first);
  });

  it("stops services with SIGTERM so they can finish", async () => {
    const { lines, supervisor } = start({ WHO: "x" });
    await waitFor("the service", async () => lines.length > 0, 10_000);
    await supervisor.stop(5_000);
    expect(lines).toContain("[fake] bye");
    expect(supervisor.pid("fake")).toBeUndefined();
  });
});
