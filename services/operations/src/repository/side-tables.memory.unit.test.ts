import { describeHandOffs } from "../../test/contracts/handoffs.contract.ts";
import { describeProviderFacts } from "../../test/contracts/provider-facts.contract.ts";
import { MemoryOperationStore } from "./memory/store.ts";

// The side tables' contracts on the memory store (Postgres's: side-tables.pg.test.ts), on
// a clock that moves on a millisecond at each reading, as the database's moves between
// transactions.

function store(): MemoryOperationStore {
  let now = Date.parse("2026-01-01T00:00:00Z");
  return new MemoryOperationStore(`m${Math.random().toString(36).slice(2, 8)}`, {
    clock: () => new Date(now++),
  });
}

describeProviderFacts("the memory store", async () => ({ store: store() }));
describeHandOffs("the memory store", async () => ({ store: store() }));
