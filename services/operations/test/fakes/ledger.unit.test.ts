import { describeLedgerContract } from "./ledger.contract.ts";
import { FakeLedger } from "./ledger.ts";

describeLedgerContract("the fake ledger", async () => new FakeLedger().client());
