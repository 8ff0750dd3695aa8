import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type OperationsHarness, startHarness } from "./test-support.ts";

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    config: {
      WITHDRAW_INTERVAL_MS: "100",
      WITHDRAW_BACKOFF_MS: "50",
      WITHDRAW_ATTEMPTS: "3",
      RECONCILE_INTERVAL_MS: "0",
    },
  });
  await h.provider("withdraws", { mode: "accept" });
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
