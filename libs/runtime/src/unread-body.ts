import type { IncomingMessage, Server, ServerResponse } from "node:http";

/**
 * Makes `server` answer `Connection: close` whenever it answers a request before the
 * request's body has arrived in full (a 413 from the length header, a 401 before the body
 * is read, any early error). Without it the answer says `keep-alive`, the server then
 * drops the unread rest of the body by destroying the socket, and a keep-alive client
 * (undici, the default `fetch`) fails its next, unrelated request on that socket. With
 * `Connection: close` the client knows not to reuse the connection, and Node closes it
 * once the answer is written. Returns the server.
 */
export function closeConnectionsWithUnreadBodies<S extends Server>(server: S): S {
  // Registered first, so every later listener (the framework's) writes through it.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const writeHead = res.writeHead;
    // Node decides between keep-alive and close when the head is written, so this is the
    // last moment the decision can see whether the body was read.
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      if (hasBody(req) && !req.complete) this.shouldKeepAlive = false;
      return Reflect.apply(writeHead, this, args);
    } as ServerResponse["writeHead"];
  });
  return server;
}

/**
 * Whether the request carries a body at all. `complete` alone cannot tell: Node sets it
 * only after the request event, so a bodiless request answered at once is not complete yet.
 */
function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}
