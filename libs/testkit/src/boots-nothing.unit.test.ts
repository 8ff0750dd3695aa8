import { execFile, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";

// The unit tier's guard (boots-nothing.ts, its setup file) is on in this file, as in
// every *.unit.test.ts: each way out of the process throws.
describe("a unit test boots nothing", () => {
  const refused = /unit tests boot nothing/;

  it("cannot open a connection: a socket, Postgres or NATS, gRPC, fetch", async () => {
    expect(() => connect(5432, "127.0.0.1")).toThrow(refused);
    await expect(fetch("http://127.0.0.1:5432/")).rejects.toThrow();
    const cause = await fetch("http://127.0.0.1:5432/").catch((err: Error) => err.cause);
    expect(String(cause)).toMatch(refused);
  });

  it("cannot listen on a port", () => {
    expect(() => createServer().listen(0, "127.0.0.1")).toThrow(refused);
  });

  it("cannot start a process, whichever way child_process is imported", async () => {
    expect(() => spawn("true")).toThrow(refused);
    expect(() => spawnSync("true")).toThrow(refused);
    expect(() => execFile("true")).toThrow(refused);
    const cp = await import("node:child_process");
    expect(() => cp.fork("x.js")).toThrow(refused);
    expect(() => cp.default.exec("true")).toThrow(refused);
  });
});
