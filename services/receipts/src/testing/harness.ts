// Test support: a receipts service on a fresh database, a client, and builders of
// submissions that match the generated receipts.
import { randomBytes, randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { EXPECTED, type Rail } from "@gw/testkit/receipts";
import { startReceipts } from "../app.ts";
import { configSchema } from "../config.ts";

export const URL_SECRET = "test-secret-of-at-least-thirty-two-characters";

export interface Harness {
  database: TestDatabase;
  service: RunningService;
  client: ReturnType<typeof createServiceClient<typeof ReceiptsService>>;
  stop(): Promise<void>;
}

/** Starts the service with its real Postgres and NATS; `env` overrides settings. */
export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  const database = await createTestDatabase();
  const config = configSchema.parse({
    DATABASE_URL: database.url,
    EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
    GRPC_PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: "silent",
    RECEIPT_URL_SECRET: URL_SECRET,
    RECEIPT_URL_TTL_SECONDS: "60",
    ...env,
  });
  const service = await startReceipts(config);
  const client = createServiceClient(ReceiptsService, `http://127.0.0.1:${service.port}`);
  return {
    database,
    service,
    client,
    async stop() {
      await service.stop();
      await database.drop();
    },
  };
}

/** A submission for a new operation whose requisites and window match the receipt factory's defaults. */
export function submission(rail: Rail, file: Uint8Array, overrides: Record<string, unknown> = {}) {
  const { method, ...requisites } = EXPECTED[rail];
  return {
    operationId: randomUUID(),
    shopId: SHOP,
    file,
    contentType: "application/pdf",
    method,
    requisites,
    expectedAmount: "1500.00",
    currency: "RUB",
    createdAt: new Date(Date.now() - 15 * 60_000).toISOString(),
    expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
    ...overrides,
  };
}

export const SHOP = "6f1d0c1e-8a52-4e7a-9c36-0d3f8f0a1b01";
export const OTHER_SHOP = "0b7e1f3a-3c1d-4a8e-b2f4-5c6d7e8f9a02";
