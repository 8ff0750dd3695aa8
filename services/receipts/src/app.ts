import { fileURLToPath } from "node:url";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { startGrpcService } from "@gw/runtime";
import type { ReceiptsConfig } from "./config.ts";
import { PdfReader } from "./pdf/parse.ts";
import { ReceiptsHandlers } from "./service.ts";
import { ReceiptUrlSigner } from "./signing.ts";
import { PostgresReceiptStore } from "./store/receipt-store.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Builds and starts the receipts service; `main.ts` and the tests both call this. */
export function startReceipts(config: ReceiptsConfig) {
  return startGrpcService({
    name: "receipts",
    schema: "receipts",
    migrationsFolder,
    serviceNames: [ReceiptsService.typeName],
    config,
    setup: ({ db, logger }) => {
      const reader = new PdfReader(
        {
          maxBytes: config.RECEIPT_PARSE_MAX_BYTES,
          maxPages: config.RECEIPT_PARSE_MAX_PAGES,
          maxObjects: config.RECEIPT_PARSE_MAX_OBJECTS,
          timeoutMs: config.RECEIPT_PARSE_TIMEOUT_MS,
          memoryMb: config.RECEIPT_PARSE_MEMORY_MB,
        },
        config.RECEIPT_PARSE_CONCURRENCY,
        config.RECEIPT_PARSE_QUEUE,
      );
      const signer = config.RECEIPT_URL_SECRET
        ? new ReceiptUrlSigner(
            config.RECEIPT_URL_SECRET,
            config.RECEIPT_URL_BASE,
            config.RECEIPT_URL_TTL_SECONDS,
          )
        : undefined;
      if (!signer) logger.warn("RECEIPT_URL_SECRET is not set: receipt links cannot be signed");
      const handlers = new ReceiptsHandlers({
        db,
        store: new PostgresReceiptStore(db),
        reader,
        signer,
        logger,
        storeMaxBytes: config.RECEIPT_STORE_MAX_BYTES,
      });
      return { routes: (router) => router.service(ReceiptsService, handlers) };
    },
  });
}
