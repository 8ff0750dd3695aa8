import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface Balancer {
  port: number;
  /** Connections handed to each backend port so far. */
  counts(): Map<number, number>;
  close(): Promise<void>;
}

/**
 * A TCP round-robin proxy on 127.0.0.1:`port` in front of `backends` (ports on
 * 127.0.0.1), for running several replicas of one service on one machine. It balances
 * per connection, not per request: HTTP/1.1 keep-alive and gRPC's single HTTP/2
 * connection stay on the replica they first reached until they close. A backend that
 * refuses the connection (its process is down or restarting) is skipped for the next
 * one; only when every backend refuses does the client's connection close.
 */
export async function startBalancer(port: number, backends: readonly number[]): Promise<Balancer> {
  if (backends.length === 0) throw new Error("a balancer needs at least one backend");
  let next = 0;
  const counts = new Map<number, number>(backends.map((b) => [b, 0]));
  const open = new Set<Socket>();

  const connect = (client: Socket, attempt: number) => {
    if (attempt >= backends.length) {
      client.destroy();
      return;
    }
    const backend = backends[next++ % backends.length]!;
    const upstream = createConnection({ host: "127.0.0.1", port: backend });
    open.add(upstream);
    upstream.once("close", () => open.delete(upstream));
    const refused = () => {
      upstream.destroy();
      connect(client, attempt + 1);
    };
    upstream.once("error", refused);
    upstream.once("connect", () => {
      upstream.off("error", refused);
      counts.set(backend, (counts.get(backend) ?? 0) + 1);
      upstream.setNoDelay(true);
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
      client.once("close", () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  };

  const server: Server = createServer({ pauseOnConnect: true, noDelay: true }, (client) => {
    open.add(client);
    client.once("close", () => open.delete(client));
    client.on("error", () => {});
    connect(client, 0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port,
    counts: () => new Map(counts),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
