import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { configSchema, type RunningSandbox, startSandbox } from "@gw/sandbox-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallbackRejectedError, type ProviderConfig, type ProviderCreateRequest } from "./connector.ts";
import { SandboxConnector } from "./sandbox.ts";

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

function createRequest(overrides: Partial<ProviderCreateRequest> = {}): ProviderCreateRequest {
  return {
    operationId: randomUUID(),
    shopId: randomUUID(),
    direction: "payin",
    method: "WT_RUB_C2C",
    amount: "1000.00",
    currency: "RUB",
    callbackUrl: receiver.url,
    ...overrides,
  };
}

async function control(method: string, path: string, body?: unknown) {
  const res = await fetch(`${sandboxUrl}/control${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: JSON.parse(await res.text()) };
}

const timeout = () => AbortSignal.timeout(5_000);

/** A signed callback as the sandbox delivered it, for the signature tests to alter. */
async function settledCallback() {
  const p = await provider("callbacks");
  const req = createRequest();
  await connector.create(p, req, timeout());
  const before = receiver.received.length;
  const settle = await control("POST", `/operations/${req.operationId}/settle`, {
    legs: ["600.00", "400.00"],
  });
  expect(settle.json.delivery.delivered).toBe(true);
  const callback = receiver.received[before]!;
  const t = Number(/t=(\d+)/.exec(callback.headers["x-sandbox-signature"] ?? "")?.[1]);
  return { p, req, settle: settle.json, callback, signedAt: new Date(t * 1000) };
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

describe("SandboxConnector.create", () => {
  it("maps an accepted card payin to its card number and receipt requirement, without an expiry", async () => {
    const p = await provider("accepting", { payin: { mode: "accept", receipt_required: true } });
    const answer = await connector.create(p, createRequest(), timeout());
    expect(answer).toEqual({
      outcome: "accepted",
      requisites: { number: expect.stringMatching(/^\d{16}$/) },
      receiptRequired: true,
    });
  });

  it("maps a phone payin to a phone, a bank code and the provider's expiry", async () => {
    const p = await provider("phones", { payin: { mode: "accept", expires_in_seconds: 600 } });
    const answer = await connector.create(p, createRequest({ method: "WT_RUB_PHONE" }), timeout());
    expect(answer.outcome).toBe("accepted");
    if (answer.outcome !== "accepted") return;
    expect(answer.requisites).toEqual({ number: expect.stringMatching(/^\+7\d{10}$/), bankname: "sberbank" });
    expect(answer.receiptRequired).toBe(false);
    expect(answer.expiresAt).toBeInstanceOf(Date);
  });

  it("sends a payout's destination and gets no requisites back", async () => {
    const p = await provider("payouts");
    const req = createRequest({
      direction: "payout",
      method: "WT_RUB_PHONE",
      number: "+79001112233",
      bankname: "tbank",
    });
    const answer = await connector.create(p, req, timeout());
    expect(answer).toEqual({ outcome: "accepted", receiptRequired: false });
    const seen = await control("GET", `/operations/${req.operationId}`);
    expect(seen.json.received[0].destination).toEqual({ number: "+79001112233", bankname: "tbank" });
  });

  it("maps a decline to a declined answer with the provider's reason", async () => {
    const p = await provider("declining", { payin: { mode: "decline", decline_reason: "no_liquidity" } });
    expect(await connector.create(p, createRequest(), timeout())).toEqual({
      outcome: "declined",
      reason: "no_liquidity",
    });
  });

  it("answers unknown, not declined, for a provider that never answers before the signal aborts", async () => {
    const p = await provider("silent", { payin: { mode: "no_answer" } });
    const req = createRequest();
    expect(await connector.create(p, req, AbortSignal.timeout(300))).toMatchObject({ outcome: "unknown" });
    const seen = await control("GET", `/operations/${req.operationId}`);
    expect(seen.json.received[0].decision).toBe("no_answer");
  });

  it("answers unknown for a provider that accepts after the caller gave up, which the status read then shows", async () => {
    const p = await provider("late", { payout: { mode: "accept", delay_ms: 1_500 } });
    const req = createRequest({ direction: "payout", number: "2200000000000004" });
    expect(await connector.create(p, req, AbortSignal.timeout(200))).toMatchObject({ outcome: "unknown" });
    expect(await connector.status(p, req.operationId, timeout())).toEqual({ status: "pending" });
  });

  it("answers unknown when the provider cannot be reached at all", async () => {
    const closed = {
      name: "gone",
      kind: "sandbox",
      baseUrl: "http://127.0.0.1:1",
      credentials: "x".repeat(16),
      methods: [],
    };
    expect(await connector.create(closed, createRequest(), timeout())).toMatchObject({ outcome: "unknown" });
    expect(await connector.status(closed, randomUUID(), timeout())).toMatchObject({ status: "unknown" });
    expect(await connector.cancel(closed, randomUUID(), timeout())).toMatchObject({ outcome: "unknown" });
  });

  it("is idempotent on the operation id: a repeat gets the same requisites and creates nothing new", async () => {
    const p = await provider("repeats");
    const req = createRequest();
    const first = await connector.create(p, req, timeout());
    const second = await connector.create(p, req, timeout());
    expect(second).toEqual(first);
    const seen = await control("GET", `/operations/${req.operationId}`);
    expect(seen.json.received).toHaveLength(1);
    expect(seen.json.received[0].requests).toBe(2);
  });

  it("reads a repeated create of an operation the provider has withdrawn as a decline, not an acceptance", async () => {
    const p = await provider("withdrawn-repeat");
    const req = createRequest();
    expect(await connector.create(p, req, timeout())).toMatchObject({ outcome: "accepted" });
    expect(await connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
    expect(await connector.create(p, req, timeout())).toEqual({ outcome: "declined", reason: "withdrawn" });
  });

  it("reads a repeated create of an operation the provider has since rejected as a decline", async () => {
    const p = await provider("rejected-repeat");
    const req = createRequest({ direction: "payout", number: "2200000000000004" });
    expect(await connector.create(p, req, timeout())).toMatchObject({ outcome: "accepted" });
    const settle = await control("POST", `/operations/${req.operationId}/settle`, { status: "rejected" });
    expect(settle.status).toBe(200);
    expect(await connector.create(p, req, timeout())).toEqual({ outcome: "declined", reason: "rejected" });
  });

  it("reads a refusal of its credentials as a decline: the provider took nothing", async () => {
    const p = await provider("guarded");
    const wrong = { ...p, credentials: "someone-elses-credentials-000" };
    expect(await connector.create(wrong, createRequest(), timeout())).toEqual({
      outcome: "declined",
      reason: "unauthorized",
    });
  });
});

describe("SandboxConnector.parseCallback", () => {
  it("accepts a two-leg settlement callback signed by the sandbox", async () => {
    const { p, req, settle, callback, signedAt } = await settledCallback();
    const result = connector.parseCallback(p, callback.body, callback.headers, signedAt);
    expect(result).toMatchObject({
      callbackId: settle.callback_id,
      operationId: req.operationId,
      status: "completed",
    });
    expect(result.legs.map((l) => l.amount)).toEqual(["600.00", "400.00"]);
    expect(result.legs.every((l) => l.completedAt instanceof Date && l.id !== "")).toBe(true);
  });

  it("rejects a tampered body", async () => {
    const { p, callback, signedAt } = await settledCallback();
    const tampered = new TextEncoder().encode(
      new TextDecoder().decode(callback.body).replace("600.00", "900.00"),
    );
    expect(() => connector.parseCallback(p, tampered, callback.headers, signedAt)).toThrow(
      CallbackRejectedError,
    );
  });

  it("rejects a callback checked with another secret", async () => {
    const { p, callback, signedAt } = await settledCallback();
    const other = { ...p, credentials: "not-the-signing-credentials" };
    expect(() => connector.parseCallback(other, callback.body, callback.headers, signedAt)).toThrow(
      CallbackRejectedError,
    );
  });

  it("rejects a timestamp older than five minutes or more than a minute ahead", async () => {
    const { p, callback, signedAt } = await settledCallback();
    const at = (seconds: number) => new Date(signedAt.getTime() + seconds * 1000);
    expect(() => connector.parseCallback(p, callback.body, callback.headers, at(301))).toThrow(
      CallbackRejectedError,
    );
    expect(() => connector.parseCallback(p, callback.body, callback.headers, at(-61))).toThrow(
      CallbackRejectedError,
    );
    expect(connector.parseCallback(p, callback.body, callback.headers, at(300)).status).toBe("completed");
    expect(connector.parseCallback(p, callback.body, callback.headers, at(-60)).status).toBe("completed");
  });

  it("rejects a callback without a signature header", async () => {
    const { p, callback, signedAt } = await settledCallback();
    expect(() => connector.parseCallback(p, callback.body, {}, signedAt)).toThrow(CallbackRejectedError);
  });
});

describe("SandboxConnector.status", () => {
  it("reads pending before settlement and the legs after", async () => {
    const p = await provider("reads");
    const req = createRequest({ direction: "payout", number: "2200000000000004" });
    await connector.create(p, req, timeout());
    expect(await connector.status(p, req.operationId, timeout())).toEqual({ status: "pending" });
    await control("POST", `/operations/${req.operationId}/settle`, { legs: ["1000.00"] });
    const result = await connector.status(p, req.operationId, timeout());
    expect(result).toMatchObject({
      operationId: req.operationId,
      status: "completed",
      legs: [{ amount: "1000.00" }],
    });
  });

  it("reads a rejected settlement as rejected without legs", async () => {
    const p = await provider("rejects");
    const req = createRequest();
    await connector.create(p, req, timeout());
    await control("POST", `/operations/${req.operationId}/settle`, { status: "rejected" });
    expect(await connector.status(p, req.operationId, timeout())).toEqual({
      operationId: req.operationId,
      status: "rejected",
      legs: [],
    });
  });

  it("answers not_found for a reference the provider never received", async () => {
    const p = await provider("unknown");
    expect(await connector.status(p, randomUUID(), timeout())).toEqual({ status: "not_found" });
  });
});

describe("SandboxConnector.cancel", () => {
  it("withdraws a pending payin: the status reads withdrawn and the provider refuses to settle it", async () => {
    const p = await provider("withdraws");
    const req = createRequest();
    await connector.create(p, req, timeout());
    expect(await connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
    expect(await connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
    expect(await connector.status(p, req.operationId, timeout())).toEqual({ status: "withdrawn" });
    const settle = await control("POST", `/operations/${req.operationId}/settle`, { legs: ["1000.00"] });
    expect(settle.status).toBe(409);
    expect(settle.json.error.code).toBe("withdrawn");
  });

  it("answers the final result of an operation the provider completed before the withdrawal", async () => {
    const p = await provider("too-late");
    const req = createRequest();
    await connector.create(p, req, timeout());
    await control("POST", `/operations/${req.operationId}/settle`, { legs: ["700.00"] });
    expect(await connector.cancel(p, req.operationId, timeout())).toMatchObject({
      outcome: "final",
      result: { operationId: req.operationId, status: "completed", legs: [{ amount: "700.00" }] },
    });
  });

  it("tells not_found, not_supported and a failed withdrawal apart", async () => {
    const p = await provider("no-withdrawals", { payin: { mode: "accept", withdraw: "unsupported" } });
    const req = createRequest();
    await connector.create(p, req, timeout());
    expect(await connector.cancel(p, randomUUID(), timeout())).toEqual({ outcome: "not_found" });
    expect(await connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "not_supported" });
    const failing = await provider("failing-withdrawals", { payin: { mode: "accept", withdraw: "failing" } });
    const other = createRequest();
    await connector.create(failing, other, timeout());
    expect(await connector.cancel(failing, other.operationId, timeout())).toMatchObject({
      outcome: "unknown",
    });
    expect(await connector.status(failing, other.operationId, timeout())).toEqual({ status: "pending" });
  });
});
