import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createLogger } from "@gw/log";
import { CreateOperationRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventually,
  failureOf,
  insertAbandonedRouting,
  type OperationsHarness,
  startHarness,
} from "../test/harness.ts";
import { connectorFor } from "./connectors/index.ts";
import { type CreateDeps, createOperation, parseCreate } from "./create.ts";

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 8_000,
    attemptTimeoutMs: 1_000,
    config: {
      WITHDRAW_INTERVAL_MS: "100",
      WITHDRAW_BACKOFF_MS: "50",
      WITHDRAW_ATTEMPTS: "3",
      RECONCILE_INTERVAL_MS: "0",
    },
  });
  await h.provider("withdraws", { mode: "accept" });
  // Payin creates answer after the attempt timeout (unknown to us, pending there).
  await h.provider("slow-in", { mode: "accept", delay_ms: 3_000 });
  await h.provider("slow-in-failing", { mode: "accept", delay_ms: 3_000, withdraw: "failing" });
  // A provider fact of a reference listed here cannot be written: the recording of a
  // withdrawal's final result fails in its transaction, as a database fault would.
  await h.sql.unsafe(`
    create table public.unwritable_facts (reference text primary key);
    create function public.refuse_fact() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from public.unwritable_facts where reference = new.reference::text) then
        raise exception 'provider fact cannot be written (test fault)';
      end if;
      return new;
    end $$;
    create trigger refuse_fact before insert on operations.provider_facts
      for each row execute function public.refuse_fact();`);
  // A withdrawal of an operation listed here cannot be written, as a database fault would.
  await h.sql.unsafe(`
    create table public.unwritable_withdrawals (operation_id uuid primary key);
    create function public.refuse_withdrawal() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from public.unwritable_withdrawals where operation_id = new.operation_id) then
        raise exception 'withdrawal cannot be written (test fault)';
      end if;
      return new;
    end $$;
    create trigger refuse_withdrawal before insert or update on operations.withdrawals
      for each row execute function public.refuse_withdrawal();`);
}, 60_000);
afterAll(() => h?.stop());

describe("the withdrawal driver", () => {
  it("counts a final result it cannot record as an attempt and gives the withdrawal up after the last one", async () => {
    const shop = await h.shop(["withdraws"]);
    const { operation } = await h.operations.createOperation({
      scope: shop,
      type: "payment",
      merchantOperationId: `mop-${randomUUID()}`,
      clientId: "client-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    const id = operation?.operationId ?? "";
    await h.sql`insert into public.unwritable_facts (reference) values (${id})`;
    // The payer pays before the cancel reaches the provider; its callback is refused.
    h.callbacks("refuse");
    expect((await h.settle(id, { legs: ["1000.00"] })).status).toBe(200);
    const cancelled = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "operationId", value: id },
      reason: "",
    });
    expect(cancelled.outcome).toBe("cancelled");

    const [withdrawal] = await eventually(
      () =>
        h.sql<{ status: string; attempts: number; last_error: string | null }[]>`
          select status, attempts, last_error from operations.withdrawals where operation_id = ${id}`,
      (rows) => expect(rows[0]?.status).toBe("gave_up"),
    );
    expect(withdrawal).toMatchObject({ attempts: 3 });
    expect(withdrawal?.last_error).toContain("provider fact cannot be written");
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "cancelled" });
    h.callbacks("forward");
  });
});

const payment = (shop: { shopId: string; merchantId: string }) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: `mop-${randomUUID()}`,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
});

/** Each provider the sandbox recorded the operation at, with its status there. */
async function atProviders(id: string): Promise<[string, string][]> {
  const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
  if (res.status === 404) return [];
  const body = (await res.json()) as { received: { provider: string; status: string }[] };
  return body.received.map((r): [string, string] => [r.provider, r.status]).sort();
}

const withdrawalsOf = (id: string) =>
  h.sql<{ provider: string; status: string; attempts: number; last_error: string | null }[]>`
    select provider, status, attempts, last_error from operations.withdrawals
    where operation_id = ${id} order by provider`;

describe("a payin passed over as unknown", () => {
  it("is a recorded withdrawal, asked again while the provider's withdraw fails, given up after the last ask", async () => {
    const shop = await h.shop(["slow-in-failing", "withdraws"]);
    const { operation } = await h.operations.createOperation(payment(shop));
    expect(operation).toMatchObject({ status: "pending" });
    const id = operation?.operationId ?? "";
    expect(await h.store.findAnyById(id)).toMatchObject({ provider: "withdraws" });
    const [withdrawal] = await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows[0]?.status).toBe("gave_up"),
    );
    expect(withdrawal).toMatchObject({ provider: "slow-in-failing", attempts: 3 });
    expect(withdrawal?.last_error).toBeTruthy();
    expect(await atProviders(id)).toEqual([
      ["slow-in-failing", "pending"],
      ["withdraws", "pending"],
    ]);
  }, 30_000);

  it("is withdrawn by another process when the create's process dies right after passing it over", async () => {
    const shop = await h.shop(["slow-in", "withdraws"]);
    // The create runs here, in a "process" that never asks for the withdrawal (it died
    // once the pass-over was written); the running service is the one left to do it.
    const deps: CreateDeps = {
      store: h.store,
      ledger: h.ledger,
      connectorFor,
      callbackBaseUrl: h.config.PROVIDER_CALLBACK_BASE_URL,
      budgetMs: 8_000,
      attemptTimeoutMs: 1_000,
      logger: createLogger("operations-test", "silent"),
    };
    const { row } = await createOperation(
      deps,
      parseCreate(create(CreateOperationRequestSchema, payment(shop))),
      AbortSignal.timeout(8_000),
    );
    expect(row).toMatchObject({ status: "pending", provider: "withdraws", routing_passed: ["slow-in"] });
    await eventually(
      () => withdrawalsOf(row.id),
      (rows) => expect(rows).toMatchObject([{ provider: "slow-in", status: "withdrawn" }]),
      20_000,
    );
    expect(await atProviders(row.id)).toEqual([
      ["slow-in", "withdrawn"],
      ["withdraws", "pending"],
    ]);
  }, 40_000);

  it("has its provider's completion placed only once the create recorded its outcome: while routing, it is asked again", async () => {
    const shop = await h.shop(["withdraws"]);
    const { operation } = await h.operations.createOperation(payment(shop));
    const id = operation?.operationId ?? "";
    // The payer paid at `withdraws`; its callback is refused, so only the withdrawal's
    // `final` answer brings the completion in.
    h.callbacks("refuse");
    expect((await h.settle(id, { legs: ["1000.00"] })).status).toBe(200);
    // As if the create had passed `withdraws` over and were still routing the payin.
    await h.sql`
      update operations.operations
      set status = 'routing', provider = null, routing_deadline = now() + interval '1 hour'
      where id = ${id}`;
    await h.sql`
      insert into operations.withdrawals (operation_id, provider, passed_over)
      values (${id}, 'withdraws', true)`;
    const [asked] = await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows[0]?.attempts).toBeGreaterThan(0),
    );
    expect(asked).toMatchObject({ status: "asking" });
    expect(asked?.last_error).toContain("still being routed");
    // Held back while the routing ends with another provider.
    await h.sql`
      update operations.withdrawals set next_attempt_at = now() + interval '1 hour' where operation_id = ${id}`;
    await h.sql`
      update operations.operations
      set status = 'pending', provider = 'elsewhere', routing_deadline = null where id = ${id}`;
    await h.sql`update operations.withdrawals set next_attempt_at = now() where operation_id = ${id}`;
    await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows[0]?.status).toBe("final"),
    );
    const facts = await h.sql<{ kind: string }[]>`
      select kind from operations.provider_facts where operation_id = ${id}`;
    expect(facts.map((f) => f.kind)).toEqual(["not_routed"]);
    h.callbacks("forward");
  }, 30_000);

  it("is left at its provider when that provider holds the operation by then, and withdrawn there once it is cancelled", async () => {
    const shop = await h.shop(["withdraws"]);
    const { operation } = await h.operations.createOperation(payment(shop));
    const id = operation?.operationId ?? "";
    // As if `withdraws` had been passed over, then accepted the retried create.
    await h.sql`
      insert into operations.withdrawals (operation_id, provider, passed_over)
      values (${id}, 'withdraws', true)`;
    await h.sql`select pg_notify('operations_withdrawals', '')`;
    await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows[0]?.status).toBe("held"),
    );
    expect(await atProviders(id)).toEqual([["withdraws", "pending"]]);
    const cancelled = await h.operations.cancelOperation({
      scope: shop,
      id: { case: "operationId", value: id },
      reason: "",
    });
    expect(cancelled.outcome).toBe("cancelled");
    await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows).toMatchObject([{ provider: "withdraws", status: "withdrawn" }]),
    );
    expect(await atProviders(id)).toEqual([["withdraws", "withdrawn"]]);
  }, 30_000);
});

describe("a cancel that wins over a dead create", () => {
  it("commits the cancellation only with the withdrawal at the provider that create was asking", async () => {
    const shop = await h.shop(["withdraws"]);
    const req = payment(shop);
    // A create whose process died while asking `withdraws` (which recorded the payin),
    // then a cancel was accepted.
    const id = await insertAbandonedRouting(h.store, shop, req, new Date(Date.now() + 60_000));
    expect(
      (
        await h.operations.cancelOperation({
          scope: shop,
          id: { case: "operationId", value: id },
          reason: "",
        })
      ).outcome,
    ).toBe("cancelled");
    await h.sql`
      update operations.operations set routing_deadline = now() - interval '1 minute' where id = ${id}`;
    await h.sql`insert into public.unwritable_withdrawals (operation_id) values (${id})`;

    // The withdrawal cannot be written: the cancellation is not committed either.
    expect(await failureOf(h.operations.createOperation(req))).toBeTruthy();
    expect(await h.store.findAnyById(id)).toMatchObject({ status: "routing", cancel_requested: true });
    expect(await withdrawalsOf(id)).toEqual([]);

    // Once it can be, a retry commits both.
    await h.sql`delete from public.unwritable_withdrawals where operation_id = ${id}`;
    await h.sql`
      update operations.operations set routing_deadline = now() - interval '1 minute' where id = ${id}`;
    expect((await h.operations.createOperation(req)).operation?.status).toBe("cancelled");
    await eventually(
      () => withdrawalsOf(id),
      (rows) => expect(rows).toMatchObject([{ provider: "withdraws", status: "not_found" }]),
    );
  }, 30_000);
});

describe("a refused payin's retry", () => {
  /** A refused create (no provider accepted) whose pass-over of `withdraws` left a withdrawal `status`. */
  async function refusedWithWithdrawal(status: string) {
    const shop = await h.shop(["withdraws"]);
    const req = payment(shop);
    const id = await insertAbandonedRouting(h.store, shop, req, undefined, {
      status: "rejected",
      routing_deadline: null,
      routing_passed: ["withdraws"],
    });
    // Not due for an hour: the driver leaves it as it is while the retry runs.
    await h.sql`
      insert into operations.withdrawals (operation_id, provider, passed_over, status, next_attempt_at)
      values (${id}, 'withdraws', true, ${status}, now() + interval '1 hour')`;
    return { req, id };
  }

  it("does not ask a provider again while its withdrawal there is still asking, nor one whose withdrawal ended final", async () => {
    for (const status of ["asking", "final"]) {
      const { req, id } = await refusedWithWithdrawal(status);
      const f = await failureOf(h.operations.createOperation(req));
      expect(f.info?.code).toBe("no_provider_accepted");
      expect(await h.store.findAnyById(id)).toMatchObject({ status: "rejected", provider: null });
      expect(await atProviders(id)).toEqual([]);
    }
  }, 30_000);

  it("asks a provider again whose withdrawal there has ended without a result", async () => {
    const { req, id } = await refusedWithWithdrawal("withdrawn");
    expect((await h.operations.createOperation(req)).operation?.status).toBe("pending");
    expect(await atProviders(id)).toEqual([["withdraws", "pending"]]);
  }, 30_000);
});
