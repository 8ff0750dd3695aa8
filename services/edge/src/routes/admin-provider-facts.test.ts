import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "@gw/proto/gateway/common/v1/common_pb";
import {
  type ProviderFact,
  ProviderFactResolutionSchema,
  ProviderFactSchema,
  type ResolveProviderFactRequest,
} from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, type EdgeTestDatabase, edgeTestDatabase, testApp } from "../testing.ts";

// GET /admin/v1/provider-facts and POST /admin/v1/provider-facts/{id}/resolve, through `app.request()` with a stand-in for operations.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const FACT_ID = "0191a5e4-7c1b-7b8e-9d4e-fffffffffff1";

const aFact = (over: Partial<ProviderFact> = {}): ProviderFact =>
  create(ProviderFactSchema, {
    id: FACT_ID,
    operationId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
    shopId: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
    provider: "acme",
    kind: "late_completion",
    providerStatus: "completed",
    direction: "payin",
    amount: "1000.00",
    currency: "RUB",
    status: "open",
    createdAt: "2026-11-24T21:00:00.000Z",
    ...over,
  });

function appWith(resolved: ResolveProviderFactRequest[]) {
  return testApp(database, {
    fakes: {
      providerFacts: {
        listProviderFacts: async () => ({ providerFacts: [aFact()] }),
        resolveProviderFact: async (req) => {
          if (req.action === "return_to_payer")
            throw new ConnectError("already resolved", Code.FailedPrecondition, undefined, [
              { desc: ErrorInfoSchema, value: { code: "provider_fact_already_resolved", field: "" } },
            ]);
          resolved.push(req);
          return {
            replayed: false,
            providerFact: aFact({
              status: "resolved",
              resolution: create(ProviderFactResolutionSchema, {
                action: req.action,
                reason: req.reason,
                operator: req.operator,
                resolvedAt: "2026-11-24T21:05:00.000Z",
              }),
            }),
          };
        },
      },
    },
  });
}

describe("provider facts over the admin API", () => {
  it("lists facts in exactly the shape of the contract", async () => {
    const res = await admin(appWith([]), "GET", "/admin/v1/provider-facts");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider_facts: [
        {
          id: FACT_ID,
          operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
          shop_id: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
          provider: "acme",
          kind: "late_completion",
          provider_status: "completed",
          direction: "payin",
          amount: "1000.00",
          currency: "RUB",
          status: "open",
          resolution: null,
          created_at: "2026-11-24T21:00:00.000Z",
        },
      ],
    });
  });

  it("documents both routes in the OpenAPI document, behind the admin token", async () => {
    const doc = (await (await appWith([]).request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(doc.paths["/admin/v1/provider-facts"]?.get?.security).toEqual([{ AdminBearer: [] }]);
    expect(doc.paths["/admin/v1/provider-facts/{id}/resolve"]?.post?.security).toEqual([{ AdminBearer: [] }]);
  });

  it("answers 401 without the admin token", async () => {
    expect((await appWith([]).request("/admin/v1/provider-facts")).status).toBe(401);
  });

  it("passes the operator and the reason of a resolution, and answers the resolved fact", async () => {
    const resolved: ResolveProviderFactRequest[] = [];
    const res = await admin(appWith(resolved), "POST", `/admin/v1/provider-facts/${FACT_ID}/resolve`, {
      action: "credit_shop",
      reason: "paid after the cancel",
      operator: "alice",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      provider_fact: {
        status: "resolved",
        resolution: { action: "credit_shop", reason: "paid after the cancel" },
      },
      replayed: false,
    });
    expect(resolved).toMatchObject([{ id: FACT_ID, action: "credit_shop", operator: "alice" }]);
  });

  it("passes a charge of the shop and a write-off for money that went out", async () => {
    const resolved: ResolveProviderFactRequest[] = [];
    const app = appWith(resolved);
    const path = `/admin/v1/provider-facts/${FACT_ID}/resolve`;
    for (const action of ["debit_shop", "write_off"]) {
      const res = await admin(app, "POST", path, { action, reason: "paid out twice", operator: "bob" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ provider_fact: { resolution: { action } } });
    }
    expect(resolved.map((r) => r.action)).toEqual(["debit_shop", "write_off"]);
  });

  it("answers 412 for a fact resolved otherwise before, and 400 for an unknown action or a missing operator", async () => {
    const app = appWith([]);
    const path = `/admin/v1/provider-facts/${FACT_ID}/resolve`;
    const other = await admin(app, "POST", path, { action: "return_to_payer", reason: "r", operator: "o" });
    expect(other.status).toBe(412);
    expect((other.body.error as { code: string }).code).toBe("provider_fact_already_resolved");
    expect((await admin(app, "POST", path, { action: "keep", reason: "r", operator: "o" })).status).toBe(400);
    expect((await admin(app, "POST", path, { action: "credit_shop", reason: "r" })).status).toBe(400);
  });
});
