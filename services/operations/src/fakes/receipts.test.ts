import {
  type Harness,
  OTHER_SHOP,
  SHOP,
  startHarness,
  submission,
} from "@gw/receipts/src/testing/harness.ts";
import { notPdf, receiptPdf, receiptSpec } from "@gw/receipts/src/testing/receipt-factory.ts";
import { afterAll, beforeAll } from "vitest";
import { describeReceiptsContract } from "./receipts.contract.ts";

// The real receipts service, on a database of its own: the reference `FakeReceipts` (receipts.unit.test.ts) is held to.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

describeReceiptsContract("the receipts service", async () => ({
  client: h.client,
  shopId: SHOP,
  otherShopId: OTHER_SHOP,
  submission: (file, operationId) => submission("card", file, { operationId }),
  genuine: () => receiptPdf(receiptSpec("vtb", "card")),
  unreadable: notPdf,
}));
