import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";
import { operationIdFor } from "./create.ts";
import { SELF_MATCHING } from "./pool.ts";

// Flexible links over real operations, matching and ledger: the create's three answers,
// the page credential, and the payer's confirmation (created, refreshed choice,
// rejected with its event, expired with nothing).

let h: OperationsHarness;
let shop: { shopId: string; merchantId: string };

beforeAll(async () => {
  h = await startHarness({
    // A budget short enough that a test can let one create run out of it.
    budgetMs: 6_000,
    config: { FLEXIBLE_LINK_SECRET: "flexible-test-secret-0123456789abcdef" },
  });
  shop = { shopId: randomUUID(), merchantId: randomUUID() };
  await h.operations.putRoute({
    shopId: shop.shopId,
    method: "WT_RUB_PHONE",
    payin: [SELF_MATCHING],
    payout: [SELF_MATCHING],
    settlementCurrency: "RUB",
  });
  const tier = { minAmount: "0.01", maxAmount: "10000000.00", percent: "0", fixed: "0" };
  await h.ledger.putPricing({ shopId: shop.shopId, method: "WT_RUB_PHONE", payin: [tier], payout: [tier] });
});
afterAll(() => h?.stop());

const payout = (amount: string) =>
  h.operations.createOperation({
    scope: shop,
    type: "payout",
    merchantOperationId: `out-${randomUUID()}`,
    clientId: "payee",
    method: "WT_RUB_PHONE",
    amount,
    currency: "RUB",
    number: "+79005556677",
    bankname: "tinkoff",
  });

const link = (recommended: string, mop = `flex-${randomUUID()}`) =>
  h.operations.createFlexibleLink({
    scope: shop,
    merchantOperationId: mop,
    clientId: "payer",
    method: "WT_RUB_PHONE",
    currency: "RUB",
    recommendedAmount: recommended,
    minAmount: "100.00",
    maxAmount: "2000.00",
    optIn: true,
    picker: "ranges",
  });

async function untilInPool(id: string) {
  for (let i = 0; i < 100; i++) {
    const found = await h.matching.getPoolPayout({ operationId: id }).catch(() => undefined);
    if (found?.payout?.status === "open") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("payout never reached the pool");
}

describe("flexible links", () => {
  it("offers a choice when the recommended amount cannot be admitted, and creates the payment at the confirmed amount", async () => {
    const out = await payout("1000.00");
    await untilInPool(out.operation?.operationId ?? "");

    // 950.00 neither closes 1000.00 nor leaves the 100.00 minimum: not admissible.
    const created = await link("950.00");
    expect(created.link?.status).toBe("amount_selection");
    expect(created.operation).toBeUndefined();
    expect(created.intervals).toEqual([
      expect.objectContaining({ minAmount: "100.00", maxAmount: "900.00" }),
      expect.objectContaining({ minAmount: "1000.00", maxAmount: "1000.00" }),
    ]);
    const k = created.k ?? "";
    expect(Buffer.from(k, "base64url").length).toBe(32);
    const id = created.link?.operationId ?? "";

    const read = await failureOf(
      h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } }),
    );
    expect(read.code).toBe(Code.NotFound);
    const wrongK = await failureOf(
      // Another first character: the last one of 32 bytes in base64url carries padding
      // bits, and was `A` already in one run of 16.
      h.operations.getFlexibleLink({ operationId: id, k: `${k.startsWith("A") ? "B" : "A"}${k.slice(1)}` }),
    );
    expect(wrongK.info?.code).toBe("flexible_link_not_found");
    const page = await h.operations.getFlexibleLink({ operationId: id, k });
    expect(page.link?.status).toBe("amount_selection");

    const outside = await failureOf(
      h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "2500.00" }),
    );
    expect(outside.code).toBe(Code.InvalidArgument);
    const taken = await h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "950.00" });
    expect(taken.outcome).toBe("amount_unavailable");
    expect(taken.intervals.length).toBeGreaterThan(0);

    const chosen = await h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "1000.00" });
    expect(chosen.outcome).toBe("created");
    expect(chosen.operation).toMatchObject({
      operationId: id,
      status: "awaiting_confirmation",
      expectedAmount: "1000.00",
      number: "+79005556677",
    });
    const again = await h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "500.00" });
    expect(again.outcome).toBe("created");
    expect(again.operation?.expectedAmount).toBe("1000.00");
    const state = await h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } });
    expect(state.operation?.status).toBe("awaiting_confirmation");
  });

  it("answers a retry with the same link and k, and another body for the key with idempotency_conflict", async () => {
    await payout("1500.00").then((r) => untilInPool(r.operation?.operationId ?? ""));
    const mop = `flex-${randomUUID()}`;
    const first = await link("1450.00", mop);
    const second = await link("1450.00", mop);
    expect(second.link).toEqual(first.link);
    expect(second.k).toBe(first.k);
    expect(second.replayed).toBe(true);
    const other = await failureOf(link("1400.00", mop));
    expect(other.info?.code).toBe("idempotency_conflict");
  });

  it("rejects with the ordinary event when the chosen amount and everything else was taken meanwhile", async () => {
    const take = async (amount: string) => {
      const taken = await h.operations.createOperation({
        scope: shop,
        type: "payment",
        merchantOperationId: `pay-${randomUUID()}`,
        clientId: "someone",
        method: "WT_RUB_PHONE",
        amount,
        currency: "RUB",
      });
      expect(taken.operation?.status).toBe("awaiting_confirmation");
    };
    await take("1500.00"); // what the previous test left in the pool
    const out = await payout("700.00");
    await untilInPool(out.operation?.operationId ?? "");
    const created = await link("650.00");
    expect(created.link?.status).toBe("amount_selection");
    const id = created.link?.operationId ?? "";
    // Another payer takes the rest of the pool before this one confirms.
    await take("700.00");
    const answer = await h.operations.confirmFlexibleAmount({
      operationId: id,
      k: created.k ?? "",
      amount: "700.00",
    });
    expect(answer.outcome).toBe("rejected");
    expect(answer.operation?.status).toBe("rejected");
    const outbox = await h.sql<{ subject: string }[]>`
      select subject from operations.outbox where subject like '%payment.rejected'`;
    expect(outbox.length).toBeGreaterThanOrEqual(1);
    const state = await h.operations.getOperation({ scope: shop, id: { case: "operationId", value: id } });
    expect(state.operation?.status).toBe("rejected");
  });

  it("a create that failed after the pool's Admit is completed by its retry with the same body, on the same slot", async () => {
    const out = await payout("1210.00");
    await untilInPool(out.operation?.operationId ?? "");
    const mop = `flex-${randomUUID()}`;
    const id = operationIdFor(shop.shopId, mop);
    // A database fault on the payment's routing outcome: the first attempt fails after
    // the pool admitted the amount and after its payment row was claimed.
    await h.sql.unsafe(`
      create or replace function operations.test_fail_outcome() returns trigger language plpgsql
      as $$ begin raise exception 'injected fault'; end $$`);
    await h.sql.unsafe(`
      create trigger test_fail_outcome before update on operations.operations for each row
      when (new.id = '${id}' and new.status <> 'routing') execute function operations.test_fail_outcome()`);
    try {
      await failureOf(link("1210.00", mop));
    } finally {
      await h.sql.unsafe("drop trigger test_fail_outcome on operations.operations");
    }
    const slots = () =>
      h.sql<{ amount: string; status: string }[]>`
        select amount::text as amount, status from matching.slots where payin_id = ${id}`;
    expect(await slots()).toEqual([{ amount: "1210.00", status: "reserved" }]);
    // The first attempt's budget is over, as a create that died leaves it.
    await h.sql`
      update operations.operations set routing_deadline = now() - interval '1 minute' where id = ${id}`;

    const retry = await link("1210.00", mop);
    expect(retry.link).toMatchObject({ operationId: id, status: "created" });
    expect(retry.operation).toMatchObject({
      operationId: id,
      status: "awaiting_confirmation",
      expectedAmount: "1210.00",
    });
    expect(await slots()).toEqual([{ amount: "1210.00", status: "reserved" }]);
    const again = await link("1210.00", mop);
    expect(again.replayed).toBe(true);
    expect(again.k).toBe(retry.k);
    expect(again.operation?.status).toBe("awaiting_confirmation");
  });

  it("a create whose payment nobody accepted after the pool's Admit frees the slot, and its retry gets the same error", async () => {
    const out = await payout("1320.00");
    const payoutId = out.operation?.operationId ?? "";
    await untilInPool(payoutId);
    const mop = `flex-${randomUUID()}`;
    const id = operationIdFor(shop.shopId, mop);
    // The payment row's claim stalls past the create budget (a slow database): the
    // router has no time left to ask the pool, and records that nobody accepted.
    await h.sql.unsafe(`
      create or replace function operations.test_stall_claim() returns trigger language plpgsql
      as $$ begin perform pg_sleep(${(h.config.CREATE_BUDGET_MS + 500) / 1000}); return new; end $$`);
    await h.sql.unsafe(`
      create trigger test_stall_claim before insert on operations.operations for each row
      when (new.id = '${id}') execute function operations.test_stall_claim()`);
    let first: Awaited<ReturnType<typeof failureOf>>;
    try {
      first = await failureOf(link("1320.00", mop));
    } finally {
      await h.sql.unsafe("drop trigger test_stall_claim on operations.operations");
    }
    expect(first.info?.code).toBe("no_provider_accepted");
    // The slot is free again: the payout's whole amount can be admitted by someone else.
    const slot = await h.sql<{ status: string }[]>`
      select status from matching.slots where payin_id = ${id}`;
    expect(slot.map((s) => s.status)).toEqual(["released"]);
    const pool = await h.matching.getPoolPayout({ operationId: payoutId });
    expect(pool.payout?.freeAmount).toBe("1320.00");

    const retry = await failureOf(link("1320.00", mop));
    expect(retry.code).toBe(first.code);
    expect(retry.info?.code).toBe("no_provider_accepted");
    // Take the payout's amount so later tests start from the pool they expect.
    const taken = await h.operations.createOperation({
      scope: shop,
      type: "payment",
      merchantOperationId: `pay-${randomUUID()}`,
      clientId: "someone",
      method: "WT_RUB_PHONE",
      amount: "1320.00",
      currency: "RUB",
    });
    expect(taken.operation?.status).toBe("awaiting_confirmation");
  });

  it("creates nothing and emits nothing when the link expired", async () => {
    const out = await payout("800.00");
    await untilInPool(out.operation?.operationId ?? "");
    const created = await link("750.00");
    const id = created.link?.operationId ?? "";
    await h.sql`update operations.flexible_links set expires_at = now() - interval '1 second' where operation_id = ${id}`;
    const before = await h.sql<{ n: number }[]>`select count(*)::int as n from operations.outbox`;
    const answer = await h.operations.confirmFlexibleAmount({
      operationId: id,
      k: created.k ?? "",
      amount: "800.00",
    });
    expect(answer.outcome).toBe("expired");
    expect(answer.operation).toBeUndefined();
    expect(await h.store.findAnyById(id)).toBeUndefined();
    const after = await h.sql<{ n: number }[]>`select count(*)::int as n from operations.outbox`;
    expect(after[0]?.n).toBe(before[0]?.n);
  });
  it("queues exactly one payment.rejected when a confirmation that rejected is retried after a failure", async () => {
    // The pool holds 800.00 from the test before; this link's 850.00 fits neither payout.
    const out = await payout("900.00");
    await untilInPool(out.operation?.operationId ?? "");
    const created = await link("850.00");
    expect(created.link?.status).toBe("amount_selection");
    const id = created.link?.operationId ?? "";
    const k = created.k ?? "";
    for (const amount of ["800.00", "900.00"]) {
      const taken = await h.operations.createOperation({
        scope: shop,
        type: "payment",
        merchantOperationId: `pay-${randomUUID()}`,
        clientId: "someone",
        method: "WT_RUB_PHONE",
        amount,
        currency: "RUB",
      });
      expect(taken.operation?.status).toBe("awaiting_confirmation");
    }
    // A database fault after the payment was rejected and announced, on the link's move
    // to rejected: the confirmation fails and the payer's page retries it.
    await h.sql.unsafe(`
      create or replace function operations.test_fail_link() returns trigger language plpgsql
      as $$ begin raise exception 'injected fault'; end $$`);
    await h.sql.unsafe(`
      create trigger test_fail_link before update on operations.flexible_links for each row
      when (new.operation_id = '${id}' and new.status = 'rejected') execute function operations.test_fail_link()`);
    try {
      await failureOf(h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "900.00" }));
    } finally {
      await h.sql.unsafe("drop trigger test_fail_link on operations.flexible_links");
    }
    const answer = await h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "900.00" });
    expect(answer.outcome).toBe("rejected");
    expect(answer.operation?.status).toBe("rejected");
    const again = await h.operations.confirmFlexibleAmount({ operationId: id, k, amount: "900.00" });
    expect(again.outcome).toBe("rejected");
    const rejected = await h.sql<{ n: number }[]>`
      select count(*)::int as n from operations.outbox
      where subject like '%payment.rejected' and position(${Buffer.from(id)} in payload) > 0`;
    expect(rejected[0]?.n).toBe(1);
  });

  it("answers an ordinary payment or payout under the key of a link in amount_selection with idempotency_conflict, and creates nothing", async () => {
    await payout("1700.00").then((r) => untilInPool(r.operation?.operationId ?? ""));
    const mop = `flex-${randomUUID()}`;
    const held = await link("1650.00", mop);
    expect(held.link?.status).toBe("amount_selection");
    const ordinary = {
      scope: shop,
      merchantOperationId: mop,
      clientId: "payer",
      method: "WT_RUB_PHONE",
      amount: "1700.00",
      currency: "RUB",
    };
    const payment = await failureOf(h.operations.createOperation({ ...ordinary, type: "payment" }));
    expect(payment.code).toBe(Code.FailedPrecondition);
    expect(payment.info?.code).toBe("idempotency_conflict");
    const asPayout = await failureOf(
      h.operations.createOperation({
        ...ordinary,
        type: "payout",
        number: "+79005556677",
        bankname: "tinkoff",
      }),
    );
    expect(asPayout.info?.code).toBe("idempotency_conflict");
    expect(await h.store.findByMop(shop.shopId, mop)).toBeUndefined();
    const page = await h.operations.getFlexibleLink({
      operationId: held.link?.operationId ?? "",
      k: held.k ?? "",
    });
    expect(page.link?.status).toBe("amount_selection");
  });

  it("holds no lock on the link while its create waits on matching: another writer takes the row at once", async () => {
    const mop = `flex-${randomUUID()}`;
    const id = operationIdFor(shop.shopId, mop);
    let pending: Promise<string> | undefined;
    // This transaction holds a lock matching's admission waits on, so the create's call
    // to matching hangs (until its timeout) while the test looks at the link's row.
    const seen = await h.sql.begin(async (tx) => {
      await tx`lock table matching.slots in access exclusive mode`;
      pending = link("1999.00", mop).then(
        () => "answered",
        (err: unknown) => `failed: ${String(err)}`,
      );
      await eventually(
        () => h.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and query ilike '%pick as (%' and pid <> pg_backend_pid()`,
        (rows) => expect(rows[0]?.n).toBeGreaterThan(0),
      );
      // The admission is waiting: the link's row must be free to any other writer.
      return h.sql
        .begin(async (other) => {
          const rows = await other`
            select status from operations.flexible_links where operation_id = ${id} for update nowait`;
          return `free: ${rows[0]?.status}`;
        })
        .catch((err: { code?: string }) => `locked: ${err.code}`);
    });
    await pending;
    expect(seen).toBe("free: deciding");
  });

  it("lets the next confirmation decide a link whose confirming process died holding its claim", async () => {
    // Amounts above every other test's payouts: 5000.00 neither closes 5050.00 nor leaves
    // the 100.00 minimum, so the payer chooses.
    const out = await payout("5050.00");
    await untilInPool(out.operation?.operationId ?? "");
    const created = await h.operations.createFlexibleLink({
      scope: shop,
      merchantOperationId: `flex-${randomUUID()}`,
      clientId: "payer",
      method: "WT_RUB_PHONE",
      currency: "RUB",
      recommendedAmount: "5000.00",
      minAmount: "100.00",
      maxAmount: "6000.00",
      optIn: true,
      picker: "ranges",
    });
    expect(created.link?.status).toBe("amount_selection");
    const id = created.link?.operationId ?? "";
    // What a confirmation killed between its claim and its write leaves: a claim, lapsed.
    await h.sql`
      update operations.flexible_links
      set claim = ${randomUUID()}, claimed_until = now() - interval '1 second'
      where operation_id = ${id}`;
    const chosen = await h.operations.confirmFlexibleAmount({
      operationId: id,
      k: created.k ?? "",
      amount: "5050.00",
    });
    expect(chosen.outcome).toBe("created");
    expect(chosen.link?.status).toBe("created");
    const [row] = await h.sql<{ status: string; claim: string | null }[]>`
      select status, claim from operations.flexible_links where operation_id = ${id}`;
    expect(row).toEqual({ status: "created", claim: null });
  });

  it("lets a create's retry decide a link whose deciding process died holding its claim", async () => {
    const mop = `flex-${randomUUID()}`;
    const first = await link("1950.00", mop);
    const id = first.link?.operationId ?? "";
    // What a create killed between its claim and its decision leaves: `deciding`, claimed, lapsed.
    await h.sql`
      update operations.flexible_links
      set status = 'deciding', claim = ${randomUUID()}, claimed_until = now() - interval '1 second'
      where operation_id = ${id}`;
    const retried = await link("1950.00", mop);
    expect(retried.link?.status).toBe(first.link?.status);
    expect(retried.link?.status).not.toBe("deciding");
    const [row] = await h.sql<{ status: string; claim: string | null }[]>`
      select status, claim from operations.flexible_links where operation_id = ${id}`;
    expect(row).toEqual({ status: retried.link?.status, claim: null });
  });
});

describe("a link whose attempt admitted a slot but never created its payment", () => {
  it("has its slot released by the reconciler once nobody decides it, and a later attempt is admitted afresh", async () => {
    const out = await payout("1717.17");
    await untilInPool(out.operation?.operationId ?? "");
    // What a create leaves when `createOperation` fails (quote or ledger unavailable)
    // after the pool's Admit: the link `deciding`, its slot reserved, no payment row.
    const mop = `flex-${randomUUID()}`;
    const id = operationIdFor(shop.shopId, mop);
    await h.store.links.insert(
      {
        operation_id: id,
        shop_id: shop.shopId,
        merchant_id: shop.merchantId,
        merchant_operation_id: mop,
        request_hash: "not-this-body",
        client_id: "payer",
        client_ip: null,
        method: "WT_RUB_PHONE",
        currency: "RUB",
        recommended_amount: "1717.17",
        min_amount: null,
        max_amount: null,
        picker: "amount",
        k_hash: "00".repeat(32),
      },
      600_000,
    );
    await h.matching.admit({
      payinId: id,
      shopId: shop.shopId,
      method: "WT_RUB_PHONE",
      currency: "RUB",
      amount: "1717.17",
      slotLifetimeMs: 600_000n,
    });
    const reconciler = h.reconciler({ afterMs: 0 });
    // A link an attempt holds is left alone.
    const held = await h.store.links.claim(id, "deciding", 60_000);
    await reconciler.runOnce();
    expect(
      (await h.matching.getPoolPayout({ operationId: out.operation?.operationId ?? "" })).payout,
    ).toMatchObject({
      reservedAmount: "1717.17",
    });
    await h.store.links.release(id, held?.claim ?? "");
    // Nobody decides it: released, once.
    await h.sql`update operations.flexible_links set expires_at = now() - interval '1 second' where operation_id = ${id}`;
    await reconciler.runOnce();
    expect(
      (await h.matching.getPoolPayout({ operationId: out.operation?.operationId ?? "" })).payout,
    ).toMatchObject({
      freeAmount: "1717.17",
      reservedAmount: "0.00",
    });
    const [slot] = await h.sql<
      { status: string }[]
    >`select status from matching.slots where payin_id = ${id}`;
    expect(slot?.status).toBe("released");
    const [marked] = await h.sql<{ released: boolean }[]>`
      select slot_released_at is not null as released from operations.flexible_links where operation_id = ${id}`;
    expect(marked?.released).toBe(true);
    // A later attempt of the link (a create retried) is admitted afresh.
    const again = await h.matching.admit({
      payinId: id,
      shopId: shop.shopId,
      method: "WT_RUB_PHONE",
      currency: "RUB",
      amount: "1717.17",
      slotLifetimeMs: 600_000n,
    });
    expect(again).toMatchObject({ created: true, slot: { status: "reserved" } });
  });
});
