import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";

/**
 * The one body limit of every HTTP surface (edge, checkout, sandbox): each request gets
 * the limit of the first rule its path matches, or `otherwise`, and the limit holds while
 * the body is read, before any handler (or credential check) runs:
 *
 * - a declared `Content-Length` over the limit is answered `tooLarge` without reading a
 *   byte (HTTP/1.1 framing then bounds what the handler can read to that length);
 * - a body without a length (chunked) is read here, counted, and refused the moment it
 *   passes the limit; one within it is handed on as a buffered body;
 * - a body within the limit that the handler answered without reading (a 401 before the
 *   body, a 404) is read and discarded before the answer goes out, so the client, still
 *   writing, reads its answer on a connection that stays open.
 *
 * A refused body is never read further into memory: the answer says `Connection: close`,
 * and `closeConnectionsWithUnreadBodies` lingers, discarding what the client still sends,
 * so that it reads the answer instead of a reset.
 */
export interface BodyLimitRule {
  /** An exact path, a prefix ending in `*` (`/v1/*`), or a pattern. */
  path: string | RegExp;
  maxBytes: number;
}

export interface BodyLimitOptions {
  /** First match wins. */
  routes: BodyLimitRule[];
  /** The limit of every request no rule names. */
  otherwise: number;
  /** The surface's own 413 answer. */
  tooLarge: (c: Context, maxBytes: number) => Response | Promise<Response>;
}

/** The limit `options` gives `path`. */
export function bodyLimitOf(options: Pick<BodyLimitOptions, "routes" | "otherwise">, path: string): number {
  for (const rule of options.routes) {
    const p = rule.path;
    if (
      typeof p === "string" ? (p.endsWith("*") ? path.startsWith(p.slice(0, -1)) : path === p) : p.test(path)
    )
      return rule.maxBytes;
  }
  return options.otherwise;
}

export function bodyLimit(options: BodyLimitOptions): MiddlewareHandler {
  return async (c, next) => {
    const maxBytes = bodyLimitOf(options, c.req.path);
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    const refuse = () => options.tooLarge(c, maxBytes);
    const framing = framingOf(c, incoming);
    if (framing === "none") return next();
    const declared = c.req.header("content-length");
    if (framing === "declared" || (!incoming && declared !== undefined)) {
      if (Number(declared) > maxBytes) return refuse();
      if (incoming) {
        await next();
        await drained(incoming);
        return;
      }
    }
    const body = incoming
      ? await readIncoming(incoming, maxBytes)
      : await readStream(c.req.raw.body, maxBytes);
    if (body === undefined) return refuse();
    c.req.raw = new Request(c.req.url, {
      method: c.req.method,
      headers: c.req.raw.headers,
      body: new Uint8Array(body),
    });
    await next();
  };
}

type Framing = "none" | "declared" | "streamed";

/**
 * How the body is framed (RFC 9112 §6.3: a body is there only with Transfer-Encoding or
 * a Content-Length), from Node's message without building the web Request, or from the
 * Request in process (`app.request`).
 */
function framingOf(c: Context, incoming: IncomingMessage | undefined): Framing {
  if (!incoming) return c.req.raw.body ? "streamed" : "none";
  if (incoming.headers["transfer-encoding"] !== undefined) return "streamed";
  const length = incoming.headers["content-length"];
  return length === undefined || length === "0" ? "none" : "declared";
}

/**
 * Reads a streamed body off Node's message, up to `maxBytes`: the bytes, or `undefined`
 * the moment it passes the limit. What arrives after that is let through unread (the
 * stream keeps flowing with no listener, so Node discards it).
 */
function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  if (incoming.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: Buffer | undefined) => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onEnd);
      incoming.off("close", onEnd);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) done(undefined);
      else chunks.push(chunk);
    };
    const onEnd = () => done(incoming.complete ? Buffer.concat(chunks, size) : undefined);
    incoming.on("data", onData);
    incoming.once("end", onEnd);
    incoming.once("error", onEnd);
    incoming.once("close", onEnd);
  });
}

/** The same for a web stream (in process): the bytes, or `undefined` past the limit. */
async function readStream(body: ReadableStream<Uint8Array> | null, maxBytes: number) {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks, size);
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
}

/**
 * Resolves once the rest of a body within its limit has arrived, discarding it. The
 * length was checked, so this reads at most that many bytes; a client that stops sending
 * is ended by the server's request timeout, which closes the message.
 */
function drained(incoming: IncomingMessage): Promise<void> {
  if (incoming.complete || incoming.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const discard = () => {};
    const done = () => {
      incoming.off("data", discard);
      incoming.off("end", done);
      incoming.off("close", done);
      incoming.off("error", done);
      resolve();
    };
    incoming.on("data", discard);
    incoming.once("end", done);
    incoming.once("close", done);
    incoming.once("error", done);
    incoming.resume();
  });
}
