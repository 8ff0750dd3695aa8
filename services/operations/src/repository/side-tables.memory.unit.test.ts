import { describeHandOffs } from "../../test/contracts/handoffs.contract.ts";
import { describeLinks } from "../../test/contracts/links.contract.ts";
import { describeProviderFacts } from "../../test/contracts/provider-facts.contract.ts";
import { describeSideTables } from "../../test/contracts/side-tables.contract.ts";
import { MemoryOperationStore } from "./memory/store.ts";

// The side tables' contracts on the memory store (Postgres's: side-tables.pg.test.ts).

const name = () => `m${Math.random().toString(36).slice(2, 8)}`;

/** A store on a clock that moves on a millisecond at each reading, as the database's moves between transactions. */
function ticking(): MemoryOperationStore {
  let now = Date.parse("2026-01-01T00:00:00Z");
  return new MemoryOperationStore(name(), { clock: () => new Date(now++) });
}

describeLinks("the memory store", async () => ({ store: new MemoryOperationStore(name()) }));
describeSideTables("the memory store", async () => ({ store: new MemoryOperationStore(name()) }));
describeProviderFacts("the memory store", async () => ({ store: ticking() }));
describeHandOffs("the memory store", async () => ({ store: ticking() }));
