import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Admission } from "./admission.ts";
import {
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  merchant,
  testApp,
} from "./testing.ts";

describe("Admission", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("serves up to maxInFlight at once, queues up to maxQueue in arrival order, and sheds the next at once", async () => {
    const admission = new Admission({ maxInFlight: 2, maxQueue: 2, queueTimeoutMs: 60_000 });
    const a = await admission.enter();
    const b = await admission.enter();
    expect("release" in a && "release" in b).toBe(true);
    const order: string[] = [];
    const noted = (name: string) => (entry: Awaited<ReturnType<Admission["enter"]>>) => {
      order.push(name);
      return entry;
    };
    const c = admission.enter().then(noted("c"));
    const d = admission.enter().then(noted("d"));
    expect(admission.queued).toBe(2);
    expect(await admission.enter()).toEqual({ shed: "queue_full" });

    if (!("release" in a) || !("release" in b)) throw new Error("not admitted");
    a.release();
    a.release(); // a second release of the same slot frees nothing more
    const admittedC = await c;
    expect(order).toEqual(["c"]);
    expect(admission.inFlight).toBe(2);
    expect(admission.queued).toBe(1);

    b.release();
    const admittedD = await d;
    expect(order).toEqual(["c", "d"]);
    if (!("release" in admittedC) || !("release" in admittedD)) throw new Error("not admitted");
    admittedC.release();
    admittedD.release();
    expect(admission.inFlight).toBe(0);
  });

  it("sheds a request that waited queueTimeoutMs and never hands it a slot afterwards", async () => {
    vi.useFakeTimers();
    const admission = new Admission({ maxInFlight: 1, maxQueue: 5, queueTimeoutMs: 1_500 });
    const holder = await admission.enter();
    const waiting = admission.enter();
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await waiting).toEqual({ shed: "queue_timeout" });
    expect(admission.queued).toBe(0);
    expect(admission.retryAfterSeconds).toBe(2);

    if (!("release" in holder)) throw new Error("not admitted");
    holder.release();
    expect(admission.inFlight).toBe(0);
    const next = await admission.enter();
    expect("release" in next).toBe(true);
  });
});

describe("admission control on the merchant API", () => {
  let database: EdgeTestDatabase;
  beforeAll(async () => {
    database = await edgeTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });

  it("answers 503 overloaded with Retry-After before touching anything when the edge is full, and serves again once a slot frees", async () => {
    const creates: CreateOperationRequest[] = [];
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    const app = testApp(database, {
      admission: { maxInFlight: 1, maxQueue: 0, queueTimeoutMs: 3_000 },
      fakes: {
        operations: {
          createOperation: async (req) => {
            creates.push(req);
            await blocked;
            return { operation: anOperation({ merchantOperationId: req.merchantOperationId }) };
          },
        },
      },
    });
    const shop = await aShopWithKey(app);
    const payment = (id: string) => ({
      merchant_operation_id: id,
      client_id: "user-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });

    const first = merchant(app, shop.apiKey, "POST", "/v1/payment", payment("order-1"));
    await vi.waitFor(() => expect(creates).toHaveLength(1));

    const shed = await merchant(app, shop.apiKey, "POST", "/v1/payment", payment("order-2"));
    expect(shed.status).toBe(503);
    expect(shed.headers.get("retry-after")).toBe("3");
    expect(shed.body).toEqual({
      error: { code: "overloaded", message: expect.stringContaining("busy") },
      request_id: expect.any(String),
    });
    // The shed create never reached operations: retrying it later is safe.
    expect(creates.map((c) => c.merchantOperationId)).toEqual(["order-1"]);

    unblock();
    expect((await first).status).toBe(200);
    const retried = await merchant(app, shop.apiKey, "POST", "/v1/payment", payment("order-2"));
    expect(retried.status).toBe(200);
    expect(creates.map((c) => c.merchantOperationId)).toEqual(["order-1", "order-2"]);
  });
});

describe("fair admission between shops", () => {
  let database: EdgeTestDatabase;
  beforeAll(async () => {
    database = await edgeTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });

  it("gives one shop at most its share of the slots (429 with Retry-After past it) while another shop's creates go through", async () => {
    const creates: string[] = [];
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    const app = testApp(database, {
      admission: { maxInFlight: 4, maxQueue: 0, queueTimeoutMs: 3_000, maxInFlightPerKey: 2 },
      fakes: {
        operations: {
          createOperation: async (req) => {
            creates.push(req.merchantOperationId);
            // The busy shop's creates are slow; the other shop's are not.
            if (req.merchantOperationId.startsWith("busy")) await blocked;
            return { operation: anOperation({ merchantOperationId: req.merchantOperationId }) };
          },
        },
      },
    });
    const busy = await aShopWithKey(app);
    const other = await aShopWithKey(app);
    const payment = (id: string) => ({
      merchant_operation_id: id,
      client_id: "user-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });

    // The busy shop holds its two slots with slow creates...
    const held = [1, 2].map((n) => merchant(app, busy.apiKey, "POST", "/v1/payment", payment(`busy-${n}`)));
    await vi.waitFor(() => expect(creates).toHaveLength(2));
    // ...and its burst beyond them is refused at once, without reaching operations.
    for (const n of [3, 4, 5]) {
      const refused = await merchant(app, busy.apiKey, "POST", "/v1/payment", payment(`busy-${n}`));
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body).toMatchObject({ error: { code: "rate_limited" } });
    }
    // The other shop is served meanwhile, on the slots the busy shop may not take.
    for (const n of [1, 2]) {
      const served = await merchant(app, other.apiKey, "POST", "/v1/payment", payment(`other-${n}`));
      expect(served.status).toBe(200);
    }
    // The two slow creates arrive in either order; nothing of the refused burst arrived.
    expect(creates.toSorted()).toEqual(["busy-1", "busy-2", "other-1", "other-2"]);

    unblock();
    for (const res of await Promise.all(held)) expect(res.status).toBe(200);
    // Its share is back once its slow creates are done.
    expect((await merchant(app, busy.apiKey, "POST", "/v1/payment", payment("busy-6"))).status).toBe(200);
  });
});
