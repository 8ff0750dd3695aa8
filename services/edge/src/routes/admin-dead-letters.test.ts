import { Code, ConnectError } from "@connectrpc/connect";
import type { DeadLetter } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { failure } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, type EdgeTestDatabase, edgeTestDatabase, type FakeServices, testApp } from "../testing.ts";

// The admin dead-letter list, retry and discard,
// through `app.request()` with stand-ins for the three services that hold dead letters.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const LEDGER_EVENT = "0191a5e4-7c1b-7b8e-9d4e-000000000001";
const WEBHOOK_EVENT = "0191a5e4-7c1b-7b8e-9d4e-000000000002";

const deadLetter = (fields: Partial<DeadLetter>): Omit<DeadLetter, "$typeName" | "$unknown"> => ({
  service: "",
  consumer: "ledger",
  eventId: LEDGER_EVENT,
  subject: "operations.payment.completed",
  attempts: 10,
  error: "InvalidPostingError: transfer op:x:settle: negative amount -51.00",
  firstFailedAt: "2026-11-24T10:00:00.000Z",
  lastFailedAt: "2026-11-24T10:13:00.000Z",
  status: "open",
  ...fields,
});

/** What each service was asked, to check the edge passes the fields through. */
const asked: { service: string; method: string; req: unknown }[] = [];

const fakes = (overrides: FakeServices["deadLetters"] = {}): FakeServices => ({
  deadLetters: {
    operations: { listDeadLetters: async () => ({ deadLetters: [] }) },
    ledger: {
      listDeadLetters: async (req) => {
        asked.push({ service: "ledger", method: "list", req });
        return { deadLetters: [deadLetter({})] };
      },
      retryDeadLetter: async (req) => {
        asked.push({ service: "ledger", method: "retry", req });
        return {
          deadLetter: deadLetter({
            status: "retried",
            resolvedBy: req.operator,
            resolvedAt: "2026-11-24T11:00:00.000Z",
          }),
        };
      },
    },
    webhooks: {
      listDeadLetters: async () => ({
        deadLetters: [
          deadLetter({
            consumer: "webhooks",
            eventId: WEBHOOK_EVENT,
            lastFailedAt: "2026-11-24T10:20:00.000Z",
            error: "Error: boom",
          }),
        ],
      }),
      discardDeadLetter: async (req) => {
        asked.push({ service: "webhooks", method: "discard", req });
        return {
          deadLetter: deadLetter({
            consumer: "webhooks",
            eventId: WEBHOOK_EVENT,
            status: "discarded",
            resolvedBy: req.operator,
            resolutionReason: req.reason,
          }),
        };
      },
    },
    ...overrides,
  },
});

describe("GET /admin/v1/dead-letters", () => {
  it("lists every service's dead letters in one shape, newest failure first", async () => {
    const app = testApp(database, { fakes: fakes() });
    const res = await admin(app, "GET", "/admin/v1/dead-letters");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      dead_letters: [
        {
          service: "webhooks",
          consumer: "webhooks",
          event_id: WEBHOOK_EVENT,
          subject: "operations.payment.completed",
          attempts: 10,
          error: "Error: boom",
          first_failed_at: "2026-11-24T10:00:00.000Z",
          last_failed_at: "2026-11-24T10:20:00.000Z",
          status: "open",
        },
        {
          service: "ledger",
          consumer: "ledger",
          event_id: LEDGER_EVENT,
          subject: "operations.payment.completed",
          attempts: 10,
          error: "InvalidPostingError: transfer op:x:settle: negative amount -51.00",
          first_failed_at: "2026-11-24T10:00:00.000Z",
          last_failed_at: "2026-11-24T10:13:00.000Z",
          status: "open",
        },
      ],
    });
  });

  it("passes the status filter on and refuses an unknown one", async () => {
    const app = testApp(database, { fakes: fakes() });
    asked.length = 0;
    expect((await admin(app, "GET", "/admin/v1/dead-letters?status=open")).status).toBe(200);
    expect(asked).toEqual([
      { service: "ledger", method: "list", req: expect.objectContaining({ status: "open" }) },
    ]);
    const bad = await admin(app, "GET", "/admin/v1/dead-letters?status=maybe");
    expect(bad.status).toBe(400);
  });

  it("answers 503 rather than an incomplete list when one service cannot answer", async () => {
    const app = testApp(database, {
      fakes: fakes({
        operations: {
          listDeadLetters: async () => {
            throw new ConnectError("connection refused", Code.Unavailable);
          },
        },
      }),
    });
    const res = await admin(app, "GET", "/admin/v1/dead-letters");
    expect(res.status).toBe(503);
    expect((res.body.error as { code: string }).code).toBe("dependency_unavailable");
  });

  it("needs the admin token", async () => {
    const app = testApp(database, { fakes: fakes() });
    expect((await app.request("/admin/v1/dead-letters")).status).toBe(401);
  });
});

describe("retry and discard", () => {
  it("retries through the service that holds the dead letter, naming the operator", async () => {
    const app = testApp(database, { fakes: fakes() });
    asked.length = 0;
    const res = await admin(app, "POST", `/admin/v1/dead-letters/ledger/ledger/${LEDGER_EVENT}/retry`, {
      operator: "alice",
    });
    expect(res.status).toBe(200);
    expect(res.body.dead_letter).toMatchObject({
      service: "ledger",
      status: "retried",
      resolved_by: "alice",
    });
    expect(asked).toEqual([
      {
        service: "ledger",
        method: "retry",
        req: expect.objectContaining({ consumer: "ledger", eventId: LEDGER_EVENT, operator: "alice" }),
      },
    ]);
  });

  it("answers 412 with the service's code when the retry fails again", async () => {
    const app = testApp(database, {
      fakes: fakes({
        ledger: {
          retryDeadLetter: async () => {
            throw failure(
              Code.FailedPrecondition,
              "dead_letter_retry_failed",
              "the retry failed: still broken",
            );
          },
        },
      }),
    });
    const res = await admin(app, "POST", `/admin/v1/dead-letters/ledger/ledger/${LEDGER_EVENT}/retry`, {
      operator: "alice",
    });
    expect(res.status).toBe(412);
    expect(res.body.error).toMatchObject({
      code: "dead_letter_retry_failed",
      message: "the retry failed: still broken",
    });
  });

  it("discards with a reason, and refuses a discard without one or for an unknown service", async () => {
    const app = testApp(database, { fakes: fakes() });
    const path = `/admin/v1/dead-letters/webhooks/webhooks/${WEBHOOK_EVENT}/discard`;
    const res = await admin(app, "POST", path, { operator: "bob", reason: "test event" });
    expect(res.status).toBe(200);
    expect(res.body.dead_letter).toMatchObject({
      service: "webhooks",
      status: "discarded",
      resolved_by: "bob",
      resolution_reason: "test event",
    });
    expect(
      ((await admin(app, "POST", path, { operator: "bob" })).body.error as { field?: string }).field,
    ).toBe("reason");
    const unknown = await admin(app, "POST", `/admin/v1/dead-letters/matching/x/${WEBHOOK_EVENT}/discard`, {
      operator: "bob",
      reason: "x",
    });
    expect(unknown.status).toBe(400);
  });
});
