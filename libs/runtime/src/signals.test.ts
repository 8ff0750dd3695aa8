import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./signals.fixture.ts", import.meta.url));

describe("stopOnSignals", () => {
  it("stops a service gracefully on a SIGTERM that arrives while it is still starting", async () => {
    const child = spawn(process.execPath, [fixture], { stdio: ["pipe", "pipe", "inherit"] });
    let output = "";
    const printed = (line: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (output.includes(line)) resolve();
        };
        child.stdout.on("data", (d: Buffer) => {
          output += d.toString();
          check();
        });
        check();
      });
    const exited = once(child, "exit");
    await printed("starting");
    // The signal lands before the start can finish (Node acts on it as it arrives; the
    // line on stdin waits for the event loop): without a handler in place, it kills.
    child.kill("SIGTERM");
    child.stdin.write("go\n");
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(output).toContain("stopped");
  });
});
