import { create } from "@bufbuild/protobuf";
import {
  type ListOperatorQueueRequest,
  OperatorQueuedPayoutSchema,
  OperatorQueueWithdrawalSchema,
} from "@gw/proto/gateway/operations/v1/operator_queue_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, type EdgeTestDatabase, edgeTestDatabase, testApp } from "../testing.ts";

// GET /admin/v1/payouts/operator-queue, through `app.request()` with a stand-in for operations.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const PAYOUT_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";

function appWith(asked: ListOperatorQueueRequest[]) {
  return testApp(database, {
    fakes: {
      operations: {
        listOperatorQueue: async (req) => {
          asked.push(req);
          return {
            payouts: [
              create(OperatorQueuedPayoutSchema, {
                operationId: PAYOUT_ID,
                shopId: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
                merchantOperationId: "payout-17",
                amount: "1000.00",
                currency: "RUB",
                createdAt: "2026-11-24T21:00:00.000Z",
                operatorQueuedAt: "2026-11-25T21:00:03.000Z",
                unresolvedProvider: "keeper",
                passedProviders: ["refuser"],
                reconcileChecks: 41,
                nextCheckAt: "2026-11-25T21:30:00.000Z",
                withdrawals: [
                  create(OperatorQueueWithdrawalSchema, {
                    provider: "keeper",
                    status: "not_supported",
                    attempts: 3,
                    lastError: "no withdrawal by key",
                    updatedAt: "2026-11-25T20:00:00.000Z",
                  }),
                ],
              }),
            ],
          };
        },
      },
    },
  });
}

describe("the operator queue over the admin API", () => {
  it("lists the payouts awaiting a decision in exactly the shape of the contract", async () => {
    const asked: ListOperatorQueueRequest[] = [];
    const res = await admin(appWith(asked), "GET", "/admin/v1/payouts/operator-queue?limit=20");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      payouts: [
        {
          operation_id: PAYOUT_ID,
          shop_id: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
          merchant_operation_id: "payout-17",
          amount: "1000.00",
          currency: "RUB",
          created_at: "2026-11-24T21:00:00.000Z",
          operator_queued_at: "2026-11-25T21:00:03.000Z",
          unresolved_provider: "keeper",
          passed_providers: ["refuser"],
          reconcile_checks: 41,
          next_check_at: "2026-11-25T21:30:00.000Z",
          withdrawals: [
            {
              provider: "keeper",
              status: "not_supported",
              attempts: 3,
              last_error: "no withdrawal by key",
              updated_at: "2026-11-25T20:00:00.000Z",
            },
          ],
        },
      ],
    });
    expect(asked.map((r) => r.limit)).toEqual([20]);
  });

  it("answers 400 for a limit out of range, and 401 without the admin token", async () => {
    const asked: ListOperatorQueueRequest[] = [];
    const app = appWith(asked);
    expect((await admin(app, "GET", "/admin/v1/payouts/operator-queue?limit=501")).status).toBe(400);
    expect((await app.request("/admin/v1/payouts/operator-queue")).status).toBe(401);
    expect(asked).toEqual([]);
  });

  it("documents the route in the OpenAPI document, behind the admin token", async () => {
    const doc = (await (await appWith([]).request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown[]; operationId?: string }>>;
    };
    const op = doc.paths["/admin/v1/payouts/operator-queue"]?.get;
    expect(op?.security).toEqual([{ AdminBearer: [] }]);
    expect(op?.operationId).toBe("adminListOperatorQueue");
  });
});
