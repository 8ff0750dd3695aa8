import { randomBytes, randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { startReceipts } from "@gw/receipts";
import { configSchema as receiptsConfig } from "@gw/receipts/config";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { EXPECTED, notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll } from "vitest";
import { describeReceiptsContract } from "./receipts.contract.ts";

// The real receipts service, on a database of its own: the reference `FakeReceipts` (receipts.unit.test.ts) is held to.
let database: TestDatabase;
let receipts: RunningService;

beforeAll(async () => {
  database = await createTestDatabase();
  receipts = await startReceipts(
    receiptsConfig.parse({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
      DB_POOL_MAX: "3",
      RECEIPT_URL_SECRET: "operations-fake-contract-secret-0123456789",
      RECEIPT_URL_BASE: "http://127.0.0.1:8080",
    }),
  );
});

afterAll(async () => {
  await receipts?.stop();
  await database?.drop();
});

describeReceiptsContract("the receipts service", async () => {
  const shopId = randomUUID();
  const { method, ...requisites } = EXPECTED.card;
  return {
    client: createServiceClient(ReceiptsService, `http://127.0.0.1:${receipts.port}`),
    shopId,
    otherShopId: randomUUID(),
    submission: (file, operationId) => ({
      operationId,
      shopId,
      file,
      contentType: "application/pdf",
      method,
      requisites,
      expectedAmount: "1500.00",
      currency: "RUB",
      createdAt: new Date(Date.now() - 15 * 60_000).toISOString(),
      expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
    }),
    genuine: () => receiptPdf(receiptSpec("vtb", "card")),
    unreadable: notPdf,
  };
});
