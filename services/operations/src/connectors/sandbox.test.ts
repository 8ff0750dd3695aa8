import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { configSchema, type RunningSandbox, startSandbox } from "@gw/sandbox-provider";
import { afterAll, beforeAll, expect } from "vitest";
import { describeConnector } from "../../test/contracts/connector.contract.ts";
import type { ProviderConfig } from "./connector.ts";
import { SandboxConnector, SIGNATURE_HEADER } from "./sandbox.ts";

/** The gateway's callback endpoint stand-in: keeps each POST's exact bytes and headers. */
class Receiver {
  readonly received: { body: Uint8Array; headers: Record<string, string> }[] = [];
  #server: Server | undefined;
  url = "";

  async start() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
        this.received.push({ body: new Uint8Array(Buffer.concat(chunks)), headers });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => this.#server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/callbacks/providers/sandbox`;
  }

  stop() {
    return new Promise((r) => this.#server?.close(r));
  }
}

const connector = new SandboxConnector();
let database: TestDatabase;
let sandbox: RunningSandbox;
let receiver: Receiver;
let sandboxUrl = "";

/** Configures a provider in the sandbox and returns it as the gateway would have it registered. */
async function provider(name: string, settings: Record<string, unknown> = {}): Promise<ProviderConfig> {
  const credentials = `credentials-of-${name}-${randomUUID()}`;
  const res = await fetch(`${sandboxUrl}/control/providers/${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ credentials, ...settings }),
  });
  expect(res.status).toBe(200);
  return { name, kind: "sandbox", baseUrl: sandboxUrl, credentials, methods: ["WT_RUB_C2C", "WT_RUB_PHONE"] };
}

async function control(method: string, path: string, body?: unknown) {
  const res = await fetch(`${sandboxUrl}/control${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: JSON.parse(await res.text()) };
}

beforeAll(async () => {
  database = await createTestDatabase();
  sandbox = await startSandbox(
    configSchema.parse({
      DATABASE_URL: database.url,
      HTTP_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
    }),
  );
  sandboxUrl = `http://127.0.0.1:${sandbox.port}`;
  receiver = new Receiver();
  await receiver.start();
});

afterAll(async () => {
  await sandbox?.stop();
  await receiver?.stop();
  await database?.drop();
});

describeConnector("SandboxConnector", async () => ({
  connector,
  provider,
  unreachable: () => ({
    name: "gone",
    kind: "sandbox",
    baseUrl: "http://127.0.0.1:1",
    credentials: "x".repeat(16),
    methods: [],
  }),
  callbackUrl: receiver.url,
  settle: async (operationId, result) => {
    const before = receiver.received.length;
    const settled = await control("POST", `/operations/${operationId}/settle`, result);
    if (settled.status !== 200) return { refused: settled.json.error.code };
    expect(settled.json.delivery.delivered).toBe(true);
    const callback = receiver.received[before];
    if (!callback) throw new Error("no callback received");
    const t = Number(/t=(\d+)/.exec(callback.headers[SIGNATURE_HEADER] ?? "")?.[1]);
    return { callback: { ...callback, signedAt: new Date(t * 1000), callbackId: settled.json.callback_id } };
  },
  received: async (operationId) => (await control("GET", `/operations/${operationId}`)).json.received,
}));
