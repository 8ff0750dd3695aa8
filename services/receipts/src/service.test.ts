import { createHash, randomBytes, randomUUID } from "node:crypto";
import { connect, createTestDatabase, type TestDatabase } from "@gw/db";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceipts } from "./app.ts";
import { configSchema } from "./config.ts";
import { receiptFiles } from "./db/schema.ts";

describe("receipts service", () => {
  let database: TestDatabase;
  let service: RunningService;

  beforeAll(async () => {
    database = await createTestDatabase();
    const config = configSchema.parse({
      DATABASE_URL: database.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
    });
    service = await startReceipts(config);
  });

  afterAll(async () => {
    await service?.stop();
    await database?.drop();
  });

  it("counts stored receipt files and their bytes", async () => {
    const client = createServiceClient(ReceiptsService, `http://127.0.0.1:${service.port}`);
    expect(await client.getStorageStats({})).toMatchObject({ files: 0n, bytes: 0n });

    const { sql, db } = connect(database.url, { max: 1 });
    const files = [randomBytes(1500), randomBytes(700)];
    await db.insert(receiptFiles).values(
      files.map((bytes) => ({
        id: randomUUID(),
        operationId: randomUUID(),
        shopId: randomUUID(),
        contentType: "application/pdf",
        sizeBytes: BigInt(bytes.length),
        sha256: createHash("sha256").update(bytes).digest("hex"),
        bytes,
      })),
    );
    await sql.end();

    expect(await client.getStorageStats({})).toMatchObject({ files: 2n, bytes: 2200n });
  });
});
