import { createClient, createRouterTransport } from "@connectrpc/connect";
import {
  connect,
  createTestDatabase,
  type Database,
  migrateSchema,
  type Sql,
  type TestDatabase,
} from "@gw/db";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ProviderFactsService } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { anOperation, type FakeServices, memoryLogger } from "@gw/testkit";
import { type Logger, pino } from "pino";
import type { AdmissionLimits } from "./admission.ts";
import { buildApp, migrationsFolder } from "./app.ts";
import { DEAD_LETTER_HOLDERS, type EdgeClients, type EdgeDeps, type Probe } from "./deps.ts";

export { anOperation, type FakeServices, memoryLogger };

/**
 * Test support: a fresh database with the edge schema, and stand-ins for the downstream
 * gRPC services built with `createRouterTransport`. The stand-ins exist only to test the
 * edge's own mapping (status, body shape, which fields it passes); the real services
 * meet the edge in the end-to-end suite.
 */

export const ADMIN_TOKEN = "test-admin-token-0123456789abcdef0123456789";
export const PAY_URL = "https://pay.example.test";

/** Clients of in-memory fakes of the downstream services. */
export function fakeClients(fakes: FakeServices): EdgeClients {
  const transport = createRouterTransport((router) => {
    // The settings read and write ask both; a fake that does not say otherwise has
    // nothing set and takes what it is given.
    router.service(OperationsService, {
      getShopPage: async (req) => ({ shopId: req.shopId }),
      putShopPage: async (req) => ({
        shopId: req.shopId,
        displayName: req.displayName,
        returnUrl: req.returnUrl,
      }),
      ...fakes.operations,
    });
    router.service(LedgerService, fakes.ledger ?? {});
    router.service(WebhooksService, { getEndpoint: async () => ({}), ...fakes.webhooks });
    router.service(MatchingService, fakes.matching ?? {});
    router.service(ReceiptsService, fakes.receipts ?? {});
    router.service(ProviderFactsService, fakes.providerFacts ?? {});
  });
  return {
    operations: createClient(OperationsService, transport),
    ledger: createClient(LedgerService, transport),
    webhooks: createClient(WebhooksService, transport),
    matching: createClient(MatchingService, transport),
    receipts: createClient(ReceiptsService, transport),
    // One transport per service: the same gRPC service is served by three of them.
    deadLetters: Object.fromEntries(
      DEAD_LETTER_HOLDERS.map((holder) => [
        holder,
        createClient(
          DeadLetterService,
          createRouterTransport((router) =>
            router.service(DeadLetterService, fakes.deadLetters?.[holder] ?? {}),
          ),
        ),
      ]),
    ) as EdgeClients["deadLetters"],
    providerFacts: createClient(ProviderFactsService, transport),
  };
}

/** A migrated test database and its pool. */
export interface EdgeTestDatabase {
  testDb: TestDatabase;
  sql: Sql;
  db: Database;
  close(): Promise<void>;
}

export async function edgeTestDatabase(): Promise<EdgeTestDatabase> {
  const testDb = await createTestDatabase();
  const { sql, db } = connect(testDb.url, { max: 4, application: "edge-test" });
  await migrateSchema(sql, db, "edge", migrationsFolder);
  return {
    testDb,
    sql,
    db,
    async close() {
      await sql.end({ timeout: 5 });
      await testDb.drop();
    },
  };
}

/** Builds an app on the test database with fake downstream services. */
export function testApp(
  database: EdgeTestDatabase,
  options: {
    fakes?: FakeServices;
    logger?: Logger;
    downstream?: Record<string, Probe>;
    self?: Record<string, Probe>;
    receiptMaxBytes?: number;
    admission?: AdmissionLimits;
  } = {},
) {
  const deps: EdgeDeps = {
    db: database.db,
    logger: options.logger ?? pino({ level: "silent" }),
    clients: fakeClients(options.fakes ?? {}),
    adminToken: ADMIN_TOKEN,
    payUrl: PAY_URL,
    receiptMaxBytes: options.receiptMaxBytes,
    admission: options.admission,
    probes: {
      self: options.self ?? {
        postgres: async () => {
          await database.sql`select 1`;
          return true;
        },
      },
      downstream: options.downstream ?? {},
    },
  };
  return buildApp(deps);
}

type App = ReturnType<typeof buildApp>;

/** Calls the admin API with the admin token. */
export async function admin(app: App, method: string, path: string, body?: unknown) {
  const res = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body ? { "content-type": "application/json" } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Creates a merchant, a shop and a key through the admin API. */
export async function aShopWithKey(app: App) {
  const merchant = await admin(app, "POST", "/admin/v1/merchants", { name: "Merchant" });
  const shop = await admin(app, "POST", "/admin/v1/shops", {
    merchant_id: merchant.body.merchant_id,
    name: "Shop",
  });
  const key = await admin(app, "POST", `/admin/v1/shops/${shop.body.shop_id}/api-keys`);
  return {
    merchantId: merchant.body.merchant_id as string,
    shopId: shop.body.shop_id as string,
    keyId: key.body.key_id as string,
    apiKey: key.body.api_key as string,
  };
}

/** Calls the merchant API with a key and a JSON body. */
export async function merchant(app: App, apiKey: string, method: string, path: string, body?: unknown) {
  const res = await app.request(path, {
    method,
    headers: { "x-api-key": apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}
