import { randomBytes, randomUUID } from "node:crypto";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { connect, createTestDatabase, type Sql, type TestDatabase } from "@gw/db";
import { connectNats, type Nats, streamName } from "@gw/events";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import {
  type Operation,
  OperationEventSchema,
  OperationSchema,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, ConnectError, createServiceClient, errorInfo } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSUMER, startLedger } from "./app.ts";
import { configSchema } from "./config.ts";

let database: TestDatabase;
let sql: Sql;
let nats: Nats;
let service: RunningService;
let client: Client<typeof LedgerService>;
const prefix = `t_${randomBytes(5).toString("hex")}`;

const config = () =>
  configSchema.parse({
    DATABASE_URL: database.url,
    EVENTS_PREFIX: prefix,
    GRPC_PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: "silent",
    DB_POOL_MAX: "4",
    // Three attempts a few milliseconds apart, so an event the ledger cannot post is a dead letter quickly.
    CONSUMER_MAX_ATTEMPTS: "3",
    CONSUMER_RETRY_BASE_MS: "20",
    CONSUMER_RETRY_MAX_MS: "80",
  });

beforeAll(async () => {
  database = await createTestDatabase();
  service = await startLedger(config());
  client = createServiceClient(LedgerService, `http://127.0.0.1:${service.port}`);
  sql = connect(database.url, { max: 2, application: "ledger-app-test" }).sql;
  nats = await connectNats("nats://127.0.0.1:4222", "ledger-app-test");
});

afterAll(async () => {
  await service?.stop();
  await nats?.jsm.streams.delete(streamName(prefix)).catch(() => {});
  await nats?.nc.close();
  await sql?.end();
  await database?.drop();
});

/** Waits until `check` passes, polling; fails after a bounded deadline. */
async function eventually(check: () => Promise<void>, deadlineMs = 15_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Resolves once the consumer has committed the event (its effect, or its deliberate lack of one). */
const processed = (eventId: string) =>
  eventually(async () => {
    const rows = await sql`select 1 from ledger.inbox where consumer = ${CONSUMER} and event_id = ${eventId}`;
    expect(rows).toHaveLength(1);
  });

/** An operation as the operations service would carry it, RUB without conversion unless overridden. */
const operation = (
  fields: Omit<MessageInitShape<typeof OperationSchema>, "$typeName"> & Pick<Operation, "type" | "status">,
): Operation =>
  create(OperationSchema, {
    operationId: randomUUID(),
    method: "WT_RUB_C2C",
    currency: "RUB",
    expectedAmount: "1000.00",
    actualAmount: "0.00",
    settlementCurrency: "RUB",
    merchantOperationId: randomUUID(),
    version: 1n,
    ...fields,
  });

/** A small completed payment of its own: an event the ledger reads, to know it has passed the ones before. */
const settledMarker = () =>
  operation({ type: "payment", status: "completed", actualAmount: "1.00", settlementAmount: "1.00" });

/** Publishes an OperationEvent to the stream, as the operations outbox relay does; returns its id. */
async function publish(shopId: string, op: Operation, eventId: string = randomUUID()): Promise<string> {
  const type = `${op.type}.${op.status}`;
  const event = create(OperationEventSchema, {
    eventId,
    type,
    occurredAt: new Date().toISOString(),
    scope: { merchantId: randomUUID(), shopId },
    operation: op,
  });
  await nats.js.publish(`${prefix}.operations.${type}`, toBinary(OperationEventSchema, event), {
    msgID: eventId,
  });
  return eventId;
}

async function rub(shopId: string) {
  const { balances } = await client.getBalances({ shopId });
  return balances.find((b) => b.currency === "RUB");
}

async function accountBalance(shopId: string, currency: string, kind: string): Promise<string | undefined> {
  const [row] = await sql<{ balance: string }[]>`
    select balance::text as balance from ledger.accounts where owner = ${shopId} and currency = ${currency} and kind = ${kind}`;
  return row?.balance;
}

/** Funds a shop through the gRPC surface, so payouts have something to reserve from. */
const fund = (shopId: string, amount: string) =>
  client.postAdjustment({
    shopId,
    currency: "RUB",
    amount,
    reason: "opening balance",
    adjustmentId: randomUUID(),
  });

describe("the ledger over gRPC", () => {
  it("quotes from pricing set through the same server", async () => {
    const shopId = randomUUID();
    await client.putPricing({
      shopId,
      method: "WT_RUB_PHONE",
      payin: [{ minAmount: "1", maxAmount: "100000", percent: "3", fixed: "0" }],
    });
    const q = await client.quote({
      shopId,
      method: "WT_RUB_PHONE",
      direction: "payin",
      amount: "500.00",
      currency: "RUB",
      settlementCurrency: "RUB",
    });
    expect(q).toMatchObject({ commissionAmount: "15.00", settlementAmount: "485.00" });
  });

  it("carries the public error code and field to the client", async () => {
    const err = await client.putFxRate({ from: "RUB", to: "USDT", rate: "abc", source: "x" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect(errorInfo(err)).toMatchObject({ code: "validation_failed", field: "rate" });
  });

  it("answers ledger_inconsistent when an account's stored balance was tampered with", async () => {
    const shopId = randomUUID();
    await fund(shopId, "50.00");
    await sql`update ledger.accounts set balance = 0 where owner = ${shopId} and kind = 'available'`;
    const err = await client.getBalances({ shopId }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as ConnectError).code).toBe(Code.Internal);
    expect(errorInfo(err)?.code).toBe("ledger_inconsistent");
  });
});

describe("the operation event consumer", () => {
  it("credits the shop and the commission when a payment completes", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "1000.00",
      recordedCurrency: "RUB",
      recordedAmount: "1000.00",
      settlementAmount: "965.00",
      commissionAmount: "35.00",
    });
    await processed(await publish(shopId, op));
    expect(await rub(shopId)).toMatchObject({ balance: "965.00", reserved: "0.00", currentMinus: "0.00" });
    expect(await accountBalance(shopId, "RUB", "commission_revenue")).toBe("35.00");
    expect(await accountBalance(shopId, "RUB", "provider_clearing")).toBe("-1000.00");
  });

  it("settles a converted payment through the fx_conversion accounts of both currencies", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "1000.00",
      fxRate: "0.010512",
      fxSource: "test-desk",
      recordedCurrency: "USDT",
      recordedAmount: "10.512000",
      settlementCurrency: "USDT",
      settlementAmount: "9.801760",
      commissionAmount: "0.710240",
    });
    await processed(await publish(shopId, op));
    const { balances } = await client.getBalances({ shopId });
    expect(balances.find((b) => b.currency === "USDT")).toMatchObject({ balance: "9.801760" });
    expect(balances.find((b) => b.currency === "RUB")).toMatchObject({ balance: "0.00" });
    expect(await accountBalance(shopId, "RUB", "provider_clearing")).toBe("-1000.00");
    expect(await accountBalance(shopId, "RUB", "fx_conversion")).toBe("1000.00");
    expect(await accountBalance(shopId, "USDT", "fx_conversion")).toBe("-10.512000");
    expect(await accountBalance(shopId, "USDT", "commission_revenue")).toBe("0.710240");
  });

  it("posts a payment once when a second event for the same completion arrives", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "100.00",
      settlementAmount: "99.00",
      commissionAmount: "1.00",
    });
    await processed(await publish(shopId, op));
    await processed(await publish(shopId, op));
    expect((await rub(shopId))?.balance).toBe("99.00");
  });

  it("reserves a pending payout's total and consumes the reserve when it completes", async () => {
    const shopId = randomUUID();
    await fund(shopId, "5000.00");
    const fields = {
      type: "payout",
      expectedAmount: "1000.00",
      settlementAmount: "1035.00",
      commissionAmount: "35.00",
    };
    const op = operation({ ...fields, status: "pending" });
    await processed(await publish(shopId, op));
    expect(await rub(shopId)).toMatchObject({
      balance: "3965.00",
      reserved: "1035.00",
      currentMinus: "0.00",
    });

    await processed(
      await publish(shopId, operation({ ...fields, status: "completed", operationId: op.operationId })),
    );
    expect(await rub(shopId)).toMatchObject({ balance: "3965.00", reserved: "0.00" });
    expect(await accountBalance(shopId, "RUB", "provider_clearing")).toBe("1000.00");
    expect(await accountBalance(shopId, "RUB", "commission_revenue")).toBe("35.00");
  });

  it("releases the reserve of a rejected payout and never reserves it again", async () => {
    const shopId = randomUUID();
    await fund(shopId, "100.00");
    const fields = {
      type: "payout",
      expectedAmount: "300.00",
      settlementAmount: "303.00",
      commissionAmount: "3.00",
    };
    const op = operation({ ...fields, status: "pending" });
    await processed(await publish(shopId, op));
    expect(await rub(shopId)).toMatchObject({ balance: "-203.00", reserved: "303.00", currentMinus: "0.00" });

    await processed(
      await publish(shopId, operation({ ...fields, status: "rejected", operationId: op.operationId })),
    );
    expect(await rub(shopId)).toMatchObject({ balance: "100.00", reserved: "0.00" });

    // A second pending event for the same payout (a new event id) arrives late.
    await processed(
      await publish(shopId, operation({ ...fields, status: "pending", operationId: op.operationId })),
    );
    expect(await rub(shopId)).toMatchObject({ balance: "100.00", reserved: "0.00" });
  });

  it("never posts a reserve that arrives after its payout was cancelled", async () => {
    const shopId = randomUUID();
    const fields = {
      type: "payout",
      expectedAmount: "10.00",
      settlementAmount: "10.50",
      commissionAmount: "0.50",
    };
    const operationId = randomUUID();
    await processed(await publish(shopId, operation({ ...fields, status: "cancelled", operationId })));
    await processed(await publish(shopId, operation({ ...fields, status: "pending", operationId })));
    expect(await rub(shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });
    expect(await sql`select 1 from ledger.transfers where operation_id = ${operationId}`).toHaveLength(0);
  });

  it("posts the reserve first when a payout's completion arrives before its pending event", async () => {
    const shopId = randomUUID();
    const fields = {
      type: "payout",
      expectedAmount: "200.00",
      settlementAmount: "204.00",
      commissionAmount: "4.00",
    };
    const operationId = randomUUID();
    await processed(await publish(shopId, operation({ ...fields, status: "completed", operationId })));
    await processed(await publish(shopId, operation({ ...fields, status: "pending", operationId })));
    // Unfunded: the shop is overdrawn by the total and nothing stays reserved.
    expect(await rub(shopId)).toMatchObject({ balance: "-204.00", reserved: "0.00", currentMinus: "204.00" });
    const kinds = await sql<{ kind: string }[]>`
      select kind from ledger.transfers where operation_id = ${operationId} order by created_at, kind`;
    expect(kinds.map((k) => k.kind).sort()).toEqual(["payout_complete", "payout_reserve"]);
  });

  it("refuses a payment whose figures do not balance, keeps consuming the events after it, and dead-letters it", async () => {
    const shopId = randomUUID();
    const bad = operation({
      type: "payment",
      status: "completed",
      actualAmount: "100.00",
      settlementAmount: "99.00",
      commissionAmount: "2.00",
    });
    const badEvent = await publish(shopId, bad);
    await fund(shopId, "1.00");
    const good = operation({
      type: "payment",
      status: "completed",
      actualAmount: "10.00",
      settlementAmount: "10.00",
    });
    await processed(await publish(shopId, good));
    expect((await rub(shopId))?.balance).toBe("11.00");
    expect(await sql`select 1 from ledger.inbox where event_id = ${badEvent}`).toHaveLength(0);
    expect(await sql`select 1 from ledger.transfers where operation_id = ${bad.operationId}`).toHaveLength(0);

    // After its attempts it is a dead letter the operator sees over the ledger's DeadLetterService.
    const deadLetters = createServiceClient(DeadLetterService, `http://127.0.0.1:${service.port}`);
    await eventually(async () => {
      const { deadLetters: open } = await deadLetters.listDeadLetters({ status: "open" });
      expect(open.find((d) => d.eventId === badEvent)).toMatchObject({
        service: "ledger",
        consumer: CONSUMER,
        subject: "operations.payment.completed",
        attempts: 3,
        status: "open",
      });
    });
    const { deadLetters: open } = await deadLetters.listDeadLetters({ status: "open" });
    expect(open.find((d) => d.eventId === badEvent)?.error).toMatch(/UnbalancedTransferError/);
    const retried = await deadLetters
      .retryDeadLetter({ consumer: CONSUMER, eventId: badEvent, operator: "test" })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(errorInfo(retried)?.code).toBe("dead_letter_retry_failed");
    expect(await sql`select 1 from ledger.transfers where operation_id = ${bad.operationId}`).toHaveLength(0);
  });

  it("books a payment whose fee took the whole captured amount: nothing to the shop, all to commission", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "50.00",
      settlementAmount: "0.00",
      commissionAmount: "50.00",
    });
    await processed(await publish(shopId, op));
    expect(await rub(shopId)).toMatchObject({ balance: "0.00" });
    expect(await accountBalance(shopId, "RUB", "commission_revenue")).toBe("50.00");
    expect(await accountBalance(shopId, "RUB", "provider_clearing")).toBe("-50.00");
  });

  it("books a payment shown with a negative settlement as a debit of the shop, exactly as shown", async () => {
    // Operations before the commission cap showed such figures; their events are still in streams.
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "50.00",
      settlementAmount: "-51.00",
      commissionAmount: "101.00",
    });
    await processed(await publish(shopId, op));
    expect(await rub(shopId)).toMatchObject({ balance: "-51.00", currentMinus: "51.00" });
    expect(await accountBalance(shopId, "RUB", "commission_revenue")).toBe("101.00");
    expect(await accountBalance(shopId, "RUB", "provider_clearing")).toBe("-50.00");
  });

  it("is never handed events that move no money: no posting, no inbox transaction", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "pending",
      settlementAmount: "965.00",
      commissionAmount: "35.00",
    });
    const pending = await publish(shopId, op);
    // The stream is applied in order: once a later event is in, the pending one was passed over.
    await processed(await publish(randomUUID(), settledMarker()));
    expect(await rub(shopId)).toMatchObject({ balance: "0.00" });
    expect(await sql`select 1 from ledger.accounts where owner = ${shopId}`).toHaveLength(0);
    expect(await sql`select 1 from ledger.inbox where event_id = ${pending}`).toHaveLength(0);
  });

  it("posts every event once when the durable consumer is recreated and the stream is redelivered", async () => {
    const shopId = randomUUID();
    const op = operation({
      type: "payment",
      status: "completed",
      actualAmount: "10.00",
      settlementAmount: "9.00",
      commissionAmount: "1.00",
    });
    await processed(await publish(shopId, op));
    const before = await sql<{ n: string }[]>`select count(*)::text as n from ledger.postings`;

    // Recreate the durable consumer: JetStream delivers every stored event again.
    await service.stop();
    await nats.jsm.consumers.delete(streamName(prefix), CONSUMER);
    service = await startLedger(config());
    client = createServiceClient(LedgerService, `http://127.0.0.1:${service.port}`);
    // One consumer handles the stream in order, so once an event published now is processed,
    // every earlier event has been delivered again and handled.
    const marker = settledMarker();
    await processed(await publish(randomUUID(), marker));
    const redelivered = await nats.jsm.consumers.info(streamName(prefix), CONSUMER);
    expect(redelivered.delivered.stream_seq).toBeGreaterThan(1);

    const after = await sql<{ n: string }[]>`
      select count(*)::text as n from ledger.postings p
      where p.transfer_id not in (select id from ledger.transfers where operation_id = ${marker.operationId})`;
    expect(after[0]?.n).toBe(before[0]?.n);
    expect((await rub(shopId))?.balance).toBe("9.00");
  });
});
