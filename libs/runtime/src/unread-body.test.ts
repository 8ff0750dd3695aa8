import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeConnectionsWithUnreadBodies } from "./unread-body.ts";

// A server that answers POSTs with 413 at once, without reading the body, and GETs with 204.
const server = closeConnectionsWithUnreadBodies(
  createServer((req, res) => {
    res.writeHead(req.method === "POST" ? 413 : 204).end();
  }),
);
let port = 0;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** One request on its own connection; resolves with the status and the Connection header. */
function send(method: string, body?: Buffer): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path: "/", agent: false }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
    });
    // The server closes while the body is still being written; an error after the answer changes nothing.
    req.on("error", reject);
    req.setHeader("connection", "keep-alive");
    if (body) req.setHeader("content-length", body.length);
    req.end(body);
  });
}

describe("closeConnectionsWithUnreadBodies", () => {
  it("answers Connection: close when it answers before the request body has arrived", async () => {
    expect(await send("POST", Buffer.alloc(4 * 1024 * 1024))).toEqual({ status: 413, connection: "close" });
  });

  it("keeps the connection alive for a request without a body", async () => {
    expect(await send("GET")).toEqual({ status: 204, connection: "keep-alive" });
  });
});
