import { randomBytes, randomUUID } from "node:crypto";
import { describeReceiptsContract } from "./receipts.contract.ts";
import { FakeReceipts } from "./receipts.ts";

describeReceiptsContract("the fake receipts service", async () => {
  const fake = new FakeReceipts();
  const shopId = randomUUID();
  return {
    client: fake.client(),
    shopId,
    otherShopId: randomUUID(),
    submission: (file, operationId) => ({
      operationId,
      shopId,
      file,
      contentType: "application/pdf",
      method: "WT_RUB_C2C",
      requisites: { number: "2202201234567890", name: "Иван Иванович Иванов" },
      expectedAmount: "1500.00",
      currency: "RUB",
      createdAt: new Date(Date.now() - 15 * 60_000).toISOString(),
      expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
    }),
    genuine: async () => {
      const file = new Uint8Array(randomBytes(64));
      fake.judge(file, { verdict: "completed" });
      return file;
    },
    unreadable: () => new Uint8Array([0xff, 0xd8, 0xff, 0xe0]),
  };
});
