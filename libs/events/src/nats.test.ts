import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { connectNats, type Nats } from "./nats.ts";

/** A port nothing listens on now (the OS hands out a free one, which is closed again). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

describe("connectNats", () => {
  let server: ChildProcess | undefined;
  let store: string | undefined;
  let nats: Nats | undefined;

  afterEach(async () => {
    await nats?.nc.close();
    server?.kill("SIGKILL");
    if (store) rmSync(store, { recursive: true, force: true });
  });

  it("waits for a NATS that is not up yet instead of failing (a service started during a NATS restart)", async () => {
    const port = await freePort();
    let settled: "connected" | "failed" | undefined;
    const connecting = connectNats(`nats://127.0.0.1:${port}`, "nats-test").then(
      (n) => {
        settled = "connected";
        nats = n;
        return n;
      },
      (err: unknown) => {
        settled = "failed";
        throw err;
      },
    );
    // Several reconnect intervals pass with nothing listening: still waiting, not failed.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(settled).toBeUndefined();
    store = mkdtempSync(join(tmpdir(), "nats-wait-"));
    server = spawn("nats-server", ["-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], {
      stdio: "ignore",
    });
    const connected = await connecting;
    expect(settled).toBe("connected");
    // JetStream answers through the waited-for connection.
    const info = await connected.jsm.getAccountInfo();
    expect(info.limits).toBeDefined();
  }, 30_000);
});
