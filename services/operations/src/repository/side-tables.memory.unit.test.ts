import { describeLinks } from "../../test/contracts/links.contract.ts";
import { describeSideTables } from "../../test/contracts/side-tables.contract.ts";
import { MemoryOperationStore } from "./memory/store.ts";

const make = async () => ({ store: new MemoryOperationStore(`m${Math.random().toString(36).slice(2, 8)}`) });

describeLinks("the memory store", make);
describeSideTables("the memory store", make);
