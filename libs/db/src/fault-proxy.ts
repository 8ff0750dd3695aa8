import { once } from "node:events";
import net from "node:net";

/**
 * How the proxy treats a connection it accepts: `pass` links it to Postgres, `recovering`
 * answers its startup message the way a recovering server does (FATAL 57P03) and closes
 * it, `reset` resets it at once.
 */
export type ProxyMode = "pass" | "recovering" | "reset";

/** How a linked connection is cut: a clean close (FIN) or a reset (RST). */
export type CutKind = "close" | "reset";

/** A TCP proxy in front of a real Postgres server that fails connections on demand (tests only). */
export interface FaultProxy {
  /** The database URL through the proxy. */
  readonly url: string;
  /** How connections accepted from now on are treated. */
  setMode(mode: ProxyMode): void;
  /**
   * Cuts every connection linked now the next time its client sends anything, before the
   * bytes reach Postgres, so the statement being sent is never run and gets no answer.
   * Connections accepted later are not cut.
   */
  cutOnNextClientData(kind: CutKind): void;
  /** Resolves once `n` connections in all were turned away (modes `recovering` and `reset`). */
  turnedAway(n: number): Promise<void>;
  close(): Promise<void>;
}

/** A client connection linked to its own connection to Postgres; `cut` once it is to be cut. */
interface Link {
  client: net.Socket;
  server: net.Socket;
  cut?: CutKind;
}

/** The message a Postgres server in recovery sends to a client that tries to log in. */
function recoveringResponse(): Buffer {
  const fields = [
    "SFATAL",
    "VFATAL",
    "C57P03",
    "Mthe database system is not yet accepting connections",
    "DConsistent recovery state has not been yet reached.",
  ];
  const body = Buffer.concat([...fields.map((f) => Buffer.from(`${f}\0`)), Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** Starts a fault proxy on a free port of 127.0.0.1 in front of the server of `targetUrl`. */
export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const target = new URL(targetUrl);
  const targetPort = Number(target.port || 5432);
  let mode: ProxyMode = "pass";
  let turnedAwayCount = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const links = new Set<Link>();

  const turnAway = () => {
    turnedAwayCount++;
    for (const w of waiters.filter((w) => w.n <= turnedAwayCount)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };

  const server = net.createServer((client) => {
    client.on("error", () => {});
    if (mode === "reset") {
      client.resetAndDestroy();
      turnAway();
      return;
    }
    if (mode === "recovering") {
      client.once("data", () => {
        client.end(recoveringResponse());
        turnAway();
      });
      return;
    }
    const upstream = net.connect(targetPort, target.hostname);
    upstream.on("error", () => client.destroy());
    const link: Link = { client, server: upstream };
    links.add(link);
    client.on("close", () => {
      links.delete(link);
      upstream.destroy();
    });
    upstream.on("close", () => client.destroy());
    client.on("data", (bytes) => {
      if (link.cut === undefined) {
        upstream.write(bytes);
        return;
      }
      if (link.cut === "reset") client.resetAndDestroy();
      else client.end();
      upstream.destroy();
    });
    upstream.on("data", (bytes) => client.write(bytes));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);

  return {
    url: url.toString(),
    setMode(next) {
      mode = next;
    },
    cutOnNextClientData(kind) {
      for (const link of links) link.cut = kind;
    },
    turnedAway(n) {
      if (turnedAwayCount >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async close() {
      for (const { client, server: upstream } of links) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise((r) => server.close(r));
    },
  };
}
