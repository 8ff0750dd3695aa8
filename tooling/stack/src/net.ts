import { createServer, Socket } from "node:net";

/** True when something accepts a TCP connection at host:port within `timeoutMs`. */
export function probeTcp(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("error", () => done(false));
    socket.connect(port, host, () => done(true));
  });
}

/**
 * A TCP port on 127.0.0.1 that is free now, chosen below Linux's ephemeral range
 * (32768–60999). Ports from `listen(0)` come from that range, and so does the local
 * port of every outgoing connection: a port picked there can be taken by some client
 * socket (a database pool connecting, say) before the service binds it. Below the range
 * only another explicit listener could take it.
 */
export async function freePort(): Promise<number> {
  // Bounded: a busy range is retried a few hundred times, then the OS picks.
  for (let attempt = 0; attempt < 300; attempt++) {
    const candidate = 20000 + Math.floor(Math.random() * 12000);
    if (taken.has(candidate)) continue;
    if (await canListen(candidate)) {
      taken.add(candidate);
      return candidate;
    }
  }
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Ports this process handed out already, so two stacks of one run never share one. */
const taken = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Polls `check` until it returns true; throws with `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 200,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
