import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./net.ts";
import type { ServiceSpec } from "./services.ts";
import { Supervisor } from "./supervisor.ts";

// A stand-in service: prints its name from the environment, then stays up until
// SIGTERM, or exits with code 3 at once when CRASH is set.
const SERVICE = `
process.stdout.write("hello from " + process.env.WHO + "\\n");
if (process.env.CRASH) process.exit(3);
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
  afterEach(async () => {
    await supervisor?.stop(2_000);
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  function start(env: Record<string, string>) {
    const lines: string[] = [];
    const notices: string[] = [];
    supervisor = new Supervisor({
      root: fakeRoot(spec.name),
      env: () => env,
      output: { line: (service, text) => lines.push(`[${service}] ${text}`), notice: (t) => notices.push(t) },
      backoffMs: 50,
      maxBackoffMs: 200,
    });
    supervisor.start(spec);
    return { lines, notices, supervisor };
  }

  it("forwards each line of a service's output under its name, with the environment it was given", async () => {
    const { lines } = start({ WHO: "the runner" });
    await waitFor("the first line", async () => lines.length > 0, 10_000);
    expect(lines[0]).toBe("[fake] hello from the runner");
  });

  it("restarts a service that dies, and says so", async () => {
    const { lines, notices } = start({ WHO: "x", CRASH: "1" });
    await waitFor("three starts", async () => lines.length >= 3, 20_000);
    expect(notices[0]).toMatch(/^fake exited \(code 3\); restarting in 50 ms$/);
    expect(notices[1]).toMatch(/restarting in 100 ms$/);
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
