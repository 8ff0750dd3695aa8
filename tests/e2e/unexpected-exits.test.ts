import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack, UnexpectedExitsError } from "../src/stack.ts";

// The supervisor restarts a dead service within a second, so a suite that only looks at
// answers passes while services crash (issue 17). The harness counts every exit nobody
// asked for and fails the suite's stop() on any.

describe("the stack harness", () => {
  let stack: TestStack;
  let stopped = false;
  beforeAll(async () => {
    stack = await startTestStack();
  }, 300_000);
  afterAll(async () => {
    if (!stopped) await stack?.stop().catch(() => {});
  });

  /** SIGKILLs the service's process, as a crash would end it, and waits for its restart. */
  async function crash(service: string, excused: boolean): Promise<number> {
    const pid = stack.pid(service);
    if (pid === undefined) throw new Error(`${service} is not running`);
    if (excused) stack.excuseExit(pid);
    process.kill(pid, "SIGKILL");
    await vi.waitFor(
      () => {
        const now = stack.pid(service);
        if (now === undefined || now === pid) throw new Error("not restarted yet");
      },
      { timeout: 30_000, interval: 100 },
    );
    await stack.waitReady(60_000, [service]);
    return pid;
  }

  it("does not count a kill the suite injects itself and excused", async () => {
    await crash("webhooks", true);
    expect(stack.unexpectedExits()).toEqual([]);
  }, 120_000);

  it("counts a process that died on its own, with its signal, and then fails the suite's stop", async () => {
    const pid = await crash("receipts", false);
    const exits = stack.unexpectedExits();
    expect(exits).toHaveLength(1);
    expect(exits[0]).toMatchObject({ instance: "receipts", pid, code: null, signal: "SIGKILL" });
    stopped = true;
    const stopping = stack.stop();
    await expect(stopping).rejects.toBeInstanceOf(UnexpectedExitsError);
    await expect(stopping).rejects.toThrow(
      /^1 unexpected process exit\(s\):\n {2}receipts \(pid \d+\) exited with SIGKILL/,
    );
  }, 180_000);
});
