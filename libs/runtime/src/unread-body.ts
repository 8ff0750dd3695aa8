import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** How long a connection closed on an unread body keeps discarding what the client still sends. */
export const LINGER_MS = 5_000;

/**
 * Makes `server` answer `Connection: close` whenever it answers a request before the
 * request's body has arrived in full (a 413 from the length header, any early error that
 * did not go through `bodyLimit`'s drain). Without it the answer says `keep-alive` and a
 * keep-alive client (undici, the default `fetch`) fails its next request on that socket.
 *
 * And it closes such a connection the way nginx does (a lingering close): the answer is
 * written, the server's side is shut (FIN), and what the client still sends is read and
 * discarded until the client closes or `lingerMs` has passed, only then the socket is
 * destroyed. Node's own close destroys the socket at once, and a client still writing
 * its body then meets a reset (EPIPE, ECONNRESET) before it reads the answer.
 * Returns the server.
 */
export function closeConnectionsWithUnreadBodies<S extends Server>(server: S, lingerMs = LINGER_MS): S {
  // Registered first, so every later listener (the framework's) writes through it.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const writeHead = res.writeHead;
    // Node decides between keep-alive and close when the head is written, so this is the
    // last moment the decision can see whether the body was read.
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      if (hasBody(req) && !req.complete) {
        this.shouldKeepAlive = false;
        lingerOnClose(req.socket, lingerMs);
      }
      return Reflect.apply(writeHead, this, args);
    } as ServerResponse["writeHead"];
  });
  return server;
}

/**
 * Replaces the socket's `destroySoon` (what Node's server calls once the last answer on a
 * `Connection: close` socket is written) with a lingering close.
 */
function lingerOnClose(socket: Socket, lingerMs: number): void {
  const lingering = socket as Socket & { lingering?: boolean };
  if (lingering.lingering) return;
  lingering.lingering = true;
  socket.destroySoon = function (this: Socket) {
    if (this.destroyed) return;
    this.end();
    const timer = setTimeout(() => this.destroy(), lingerMs);
    timer.unref();
    this.once("close", () => clearTimeout(timer));
    // The client's FIN (it read the answer and closed): nothing more to discard.
    this.once("end", () => this.destroy());
    // The HTTP parser keeps reading the body into the message, which Node's server
    // dumps (discards) once the answer is written.
    this.resume();
  };
}

/**
 * Whether the request carries a body at all. `complete` alone cannot tell: Node sets it
 * only after the request event, so a bodiless request answered at once is not complete yet.
 */
function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}
