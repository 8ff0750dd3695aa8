import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of NATS (tests only) whose connections can be cut, refused until
 * restored, or have what the server sends held back (`delay`: a slow or half-open link).
 */
export async function startNatsProxy(natsUrl: string) {
  const target = new URL(natsUrl.replace(/^nats:/, "http:"));
  const sockets = new Set<Socket>();
  let refusing = false;
  let delayMs = 0;
  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 4222), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    // Server to client, held `delayMs` (in order): messages reach this connection late.
    upstream.on("data", (chunk: Buffer) => {
      if (delayMs === 0) client.write(chunk);
      else setTimeout(() => client.write(chunk), delayMs);
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    cut() {
      refusing = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      refusing = false;
    },
    delay(ms: number) {
      delayMs = ms;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
