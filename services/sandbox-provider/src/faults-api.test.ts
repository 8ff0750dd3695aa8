import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningSandbox, startSandbox } from "./app.ts";
import type { Books } from "./books.ts";
import { configSchema } from "./config.ts";

/** The gateway's callback endpoint stand-in: keeps every body it is sent, in order. */
class Receiver {
  readonly bodies: { callback_id: string; reference: string; status: string; legs: { amount: string }[] }[] =
    [];
  #server: Server | undefined;
  url = "";

  async start() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => this.#server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/callbacks/sandbox`;
  }

  of(reference: string) {
    return this.bodies.filter((b) => b.reference === reference);
  }

  stop() {
    return new Promise((r) => this.#server?.close(r));
  }
}

async function eventually<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}

const CREDENTIALS = "sandbox-secret-credentials-0002";
let database: TestDatabase;
let sandbox: RunningSandbox;
let receiver: Receiver;
let base = "";

async function call(method: string, path: string, body?: unknown, signal?: AbortSignal) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${CREDENTIALS}` },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: signal ?? null,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** A provider whose payins always meet `faults` (each probability 1 in its stage). */
const faulty = (name: string, faults: Record<string, unknown>) =>
  call("PUT", `/control/providers/${name}`, {
    credentials: CREDENTIALS,
    payin: { mode: "accept", faults: { seed: "test", slow_ms: 100, ...faults } },
  });
const payin = (provider: string, reference: string, signal?: AbortSignal) =>
  call(
    "POST",
    `/providers/${provider}/v1/payins`,
    { reference, method: "WT_RUB_C2C", amount: "1000.00", currency: "RUB", callback_url: receiver.url },
    signal,
  );
const decisionOf = async (reference: string) =>
  (await call("GET", `/control/operations/${reference}`)).json.received[0].decision as string;
const books = async () => (await call("GET", "/control/books")).json as Books;

beforeAll(async () => {
  database = await createTestDatabase();
  sandbox = await startSandbox(
    configSchema.parse({
      DATABASE_URL: database.url,
      HTTP_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
      CALLBACK_RETRY_BASE_MS: "50",
      CALLBACK_RETRY_MAX_MS: "200",
      CALLBACK_POLL_MS: "25",
    }),
  );
  base = `http://127.0.0.1:${sandbox.port}`;
  receiver = new Receiver();
  await receiver.start();
});

afterAll(async () => {
  await sandbox?.stop();
  await receiver?.stop();
  await database?.drop();
});

describe("sandbox provider faults", () => {
  it("takes an operation and then answers 5xx", async () => {
    await faulty("fivexx", { create: { accept_then_5xx: 1 } });
    expect((await payin("fivexx", "ref-5xx")).status).toBe(502);
    expect(await decisionOf("ref-5xx")).toBe("accepted");
  });

  it("takes an operation and then resets the connection", async () => {
    await faulty("reset", { create: { accept_then_reset: 1 } });
    await expect(payin("reset", "ref-reset")).rejects.toThrow();
    expect(await decisionOf("ref-reset")).toBe("accepted");
  });

  it("records an operation only after its delay, though the caller gave up: its status reads not_found until then", async () => {
    await faulty("queued", { create: { record_after_delay: 1 }, slow_ms: 1_000 });
    await expect(payin("queued", "ref-queued", AbortSignal.timeout(100))).rejects.toThrow();
    expect((await call("GET", "/providers/queued/v1/operations/ref-queued")).status).toBe(404);
    for (;;) {
      const read = await call("GET", "/providers/queued/v1/operations/ref-queued");
      if (read.status === 200) {
        expect(read.json).toMatchObject({ decision: "accepted", status: "pending" });
        break;
      }
      expect(read.json.error.code).toBe("not_found");
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it("takes an operation and answers only after a caller that gave up has left", async () => {
    await faulty("late", { create: { answer_after_timeout: 1 }, slow_ms: 60_000 });
    await expect(payin("late", "ref-late", AbortSignal.timeout(200))).rejects.toThrow();
    expect(await decisionOf("ref-late")).toBe("accepted");
  });

  it("declines after a delay", async () => {
    await faulty("slowdecline", { create: { decline_after_delay: 1 } });
    const answer = await payin("slowdecline", "ref-decline");
    expect(answer.json.decision).toBe("declined");
  });

  it("sends the completion before the create's answer, which still reads pending", async () => {
    await faulty("early", { create: { completion_before_answer: 1 } });
    const answer = await payin("early", "ref-early");
    expect(answer.json).toMatchObject({ decision: "accepted", status: "pending" });
    expect(receiver.of("ref-early").map((b) => b.status)).toEqual(["completed"]);
  });

  it("delivers a duplicated callback twice with the same callback id", async () => {
    await faulty("dup", { callback: { duplicate: 1 } });
    await payin("dup", "ref-dup");
    await call("POST", "/control/operations/ref-dup/settle", { legs: ["1000.00"] });
    const got = receiver.of("ref-dup");
    expect(got).toHaveLength(2);
    expect(got[1]?.callback_id).toBe(got[0]?.callback_id);
  });

  it("sends a stale rejection after a completion while its status stays completed", async () => {
    await faulty("stale", { callback: { rejection_after_completion: 1 } });
    await payin("stale", "ref-stale");
    await call("POST", "/control/operations/ref-stale/settle", { legs: ["1000.00"] });
    expect(receiver.of("ref-stale").map((b) => b.status)).toEqual(["completed", "rejected"]);
    expect((await call("GET", "/providers/stale/v1/operations/ref-stale")).json.status).toBe("completed");
  });

  it("delivers a delayed callback later, from its retry queue", async () => {
    await faulty("delayed", { callback: { delayed: 1 } });
    await payin("delayed", "ref-delayed");
    const settled = await call("POST", "/control/operations/ref-delayed/settle", { legs: ["1000.00"] });
    expect(settled.json.delivery.delivered).toBe(false);
    await eventually(() => (receiver.of("ref-delayed").length === 1 ? true : undefined));
  });

  it("settles short of, above, or in several legs of the amount asked, and books what it reported", async () => {
    for (const fault of ["short", "over", "split"] as const) {
      await faulty(`legs-${fault}`, { settlement: { [fault]: 1 } });
      await payin(`legs-${fault}`, `ref-${fault}`);
      await call("POST", `/control/operations/ref-${fault}/settle`, { status: "completed" });
    }
    const sum = (ref: string) =>
      receiver.of(ref)[0]!.legs.reduce((s, l) => s + BigInt(l.amount.replace(".", "")), 0n);
    expect(sum("ref-short")).toBeLessThan(100000n);
    expect(sum("ref-over")).toBeGreaterThan(100000n);
    expect(sum("ref-split")).toBe(100000n);
    expect(receiver.of("ref-split")[0]!.legs.length).toBeGreaterThan(1);
    const totals = (await books()).totals;
    const over = totals.find((t) => t.provider === "legs-over");
    expect(BigInt(over?.collected.replace(".", "") ?? "0")).toBe(sum("ref-over"));
  });

  it("fails its status endpoint and its withdraw when told to", async () => {
    await faulty("statusdown", {
      status: { failing: 1 },
      withdraw: { failing: 1 },
    });
    await payin("statusdown", "ref-status");
    expect((await call("GET", "/providers/statusdown/v1/operations/ref-status")).status).toBe(503);
    expect((await call("POST", "/providers/statusdown/v1/operations/ref-status/withdraw")).status).toBe(503);
  });

  it("counts every fault it injected by kind in its books", async () => {
    const { faults } = await books();
    expect(faults).toMatchObject({
      "create.accept_then_5xx": 1,
      "create.accept_then_reset": 1,
      "callback.duplicate": 1,
      "settlement.over": 1,
      "status.failing": 1,
      "withdraw.failing": 1,
    });
  });
});

describe("withdrawal by key of a payout the provider has no record of yet", () => {
  /** A provider that records each payout's create only `slowMs` after it arrives. */
  const queuedPayouts = (name: string, withdraw: "supported" | "unsupported", slowMs = 600) =>
    call("PUT", `/control/providers/${name}`, {
      credentials: CREDENTIALS,
      payin: { mode: "accept" },
      payout: {
        mode: "accept",
        withdraw,
        faults: { seed: "t", slow_ms: slowMs, create: { record_after_delay: 1 } },
      },
    });
  const payout = (provider: string, reference: string, signal?: AbortSignal) =>
    call(
      "POST",
      `/providers/${provider}/v1/payouts`,
      {
        reference,
        method: "WT_RUB_C2C",
        amount: "700.00",
        currency: "RUB",
        callback_url: receiver.url,
        destination: { number: "2200123456789010" },
      },
      signal,
    );
  const until = async (check: () => Promise<boolean>) => {
    const deadline = Date.now() + 5_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("condition not reached in time");
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const received = async (reference: string) =>
    (await call("GET", `/control/operations/${reference}`)).json.received?.[0] as
      | { decision: string; status: string; requests: number; amount: string | null }
      | undefined;

  it("tombstones the key durably: the create that arrives after it is refused and never paid", async () => {
    await queuedPayouts("tomb", "supported");
    await expect(payout("tomb", "ref-tomb", AbortSignal.timeout(100))).rejects.toThrow();
    expect((await call("GET", "/providers/tomb/v1/operations/ref-tomb")).status).toBe(404);
    const withdrawn = await call("POST", "/providers/tomb/v1/operations/ref-tomb/withdraw", {
      direction: "payout",
    });
    expect(withdrawn).toMatchObject({ status: 200, json: { status: "withdrawn", decision: "declined" } });
    expect((await call("GET", "/providers/tomb/v1/operations/ref-tomb")).json).toMatchObject({
      status: "withdrawn",
    });
    // The create the provider was still working on reaches the tombstone: refused there.
    await until(async () => (await received("ref-tomb"))?.requests === 1);
    expect(await received("ref-tomb")).toMatchObject({
      decision: "declined",
      status: "withdrawn",
      amount: "700.00",
    });
    // Another create of the key is refused too, and nothing settles it.
    expect((await payout("tomb", "ref-tomb")).json).toMatchObject({
      decision: "declined",
      status: "withdrawn",
    });
    const settle = await call("POST", "/control/operations/ref-tomb/settle", { legs: ["700.00"] });
    expect(settle.status).toBeGreaterThanOrEqual(400);
    const paid = (await books()).totals.filter((t) => t.provider === "tomb");
    expect(paid).toEqual([]);
  });

  it("offers no withdrawal at a provider without one: 501, and its late create is taken and payable", async () => {
    await queuedPayouts("nowithdraw", "unsupported");
    await expect(payout("nowithdraw", "ref-now", AbortSignal.timeout(100))).rejects.toThrow();
    const refused = await call("POST", "/providers/nowithdraw/v1/operations/ref-now/withdraw", {
      direction: "payout",
    });
    expect(refused).toMatchObject({ status: 501, json: { error: { code: "not_supported" } } });
    await until(async () => (await received("ref-now"))?.status === "pending");
  });

  it("answers 404 for a key it has no record of when the withdrawal names no direction", async () => {
    await queuedPayouts("nodir", "supported");
    const res = await call("POST", "/providers/nodir/v1/operations/ref-nodir/withdraw", {});
    expect(res).toMatchObject({ status: 404, json: { error: { code: "not_found" } } });
  });
});
