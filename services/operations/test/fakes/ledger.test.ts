import { startLedger } from "@gw/ledger";
import { configSchema as ledgerConfig } from "@gw/ledger/config";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { createServiceClient } from "@gw/rpc";
import { describeLedgerContract } from "./ledger.contract.ts";
import { realService } from "./real-service.ts";

// The real ledger, on a database of its own: the reference `FakeLedger` (ledger.unit.test.ts) is held to.
const ledger = realService((env) => startLedger(ledgerConfig.parse(env)));

describeLedgerContract("the ledger service", async () => createServiceClient(LedgerService, ledger.url));
