import { fileURLToPath } from "node:url";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { type GrpcServiceConfig, startGrpcService } from "@gw/runtime";
import { ReceiptsHandlers } from "./service.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Builds and starts the receipts service; `main.ts` and the tests both call this. */
export function startReceipts(config: GrpcServiceConfig) {
  return startGrpcService({
    name: "receipts",
    schema: "receipts",
    migrationsFolder,
    serviceNames: [ReceiptsService.typeName],
    config,
    setup: ({ db }) => ({
      routes: (router) => router.service(ReceiptsService, new ReceiptsHandlers(db)),
    }),
  });
}
