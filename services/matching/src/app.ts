import { fileURLToPath } from "node:url";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { type GrpcServiceConfig, startGrpcService } from "@gw/runtime";
import { MatchingHandlers } from "./service.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Builds and starts the matching service; `main.ts` and the tests both call this. */
export function startMatching(config: GrpcServiceConfig) {
  return startGrpcService({
    name: "matching",
    schema: "matching",
    migrationsFolder,
    serviceNames: [MatchingService.typeName],
    config,
    setup: ({ db }) => ({
      routes: (router) => router.service(MatchingService, new MatchingHandlers(db)),
    }),
  });
}
