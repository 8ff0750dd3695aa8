import { randomBytes } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { startLedger } from "@gw/ledger";
import { configSchema as ledgerConfig } from "@gw/ledger/config";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { afterAll, beforeAll } from "vitest";
import { describeLedgerContract } from "./ledger.contract.ts";

// The real ledger, on a database of its own: the reference `FakeLedger` (ledger.unit.test.ts) is held to.
let database: TestDatabase;
let ledger: RunningService;

beforeAll(async () => {
  database = await createTestDatabase();
  ledger = await startLedger(
    ledgerConfig.parse({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
      DB_POOL_MAX: "3",
    }),
  );
});

afterAll(async () => {
  await ledger?.stop();
  await database?.drop();
});

describeLedgerContract("the ledger service", async () =>
  createServiceClient(LedgerService, `http://127.0.0.1:${ledger.port}`),
);
