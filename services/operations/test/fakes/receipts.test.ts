import { randomUUID } from "node:crypto";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { startReceipts } from "@gw/receipts";
import { configSchema as receiptsConfig } from "@gw/receipts/config";
import { createServiceClient } from "@gw/rpc";
import { EXPECTED, notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { realService } from "./real-service.ts";
import { describeReceiptsContract } from "./receipts.contract.ts";

// The real receipts service, on a database of its own: the reference `FakeReceipts` (receipts.unit.test.ts) is held to.
const receipts = realService((env) => startReceipts(receiptsConfig.parse(env)), {
  RECEIPT_URL_SECRET: "operations-fake-contract-secret-0123456789",
  RECEIPT_URL_BASE: "http://127.0.0.1:8080",
});

describeReceiptsContract("the receipts service", async () => {
  const shopId = randomUUID();
  const { method, ...requisites } = EXPECTED.card;
  return {
    client: createServiceClient(ReceiptsService, receipts.url),
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
