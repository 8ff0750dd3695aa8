import { describe, expect, it } from "vitest";
import { claimRow, describeOperationStore } from "../../test/contracts/store.contract.ts";
import { MemoryOperationStore } from "./memory/store.ts";

describeOperationStore("the memory store", async () => {
  const store = new MemoryOperationStore(`m${Math.random().toString(36).slice(2, 8)}`);
  return {
    store,
    events: async () => store.outbox().map((e) => e.subject),
    holdKeyForLink: async (row) =>
      store.holdKeyForLink({
        operationId: row.id,
        shopId: row.shop_id,
        merchantOperationId: row.merchant_operation_id,
        kHash: "k",
        status: "amount_selection",
      }),
  };
});

describe("the memory store's own limits", () => {
  it("refuses a write without the tx from inside an open transaction instead of waiting for itself", async () => {
    const store = new MemoryOperationStore();
    await expect(
      store.transaction(() => store.claim(claimRow(), { budgetMs: 1, forLink: false, configVersion: "1" })),
    ).rejects.toThrow(/inside an open transaction/);
  });

  it("runs no SQL on its transactions, nor takes another store's", async () => {
    const store = new MemoryOperationStore();
    const other = new MemoryOperationStore();
    await expect(store.transaction(async (tx) => tx`select 1`)).rejects.toThrow(/runs no SQL/);
    await expect(other.transaction((tx) => store.lock("x", tx))).rejects.toThrow(/not an open transaction/);
  });
});
