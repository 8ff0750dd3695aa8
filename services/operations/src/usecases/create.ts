import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { parseCreate } from "../domain/create-request.ts";
import { type OperationRow, toOperation } from "../domain/model.ts";
import type { OperationStoreCore } from "../repository/operations.ts";
import { claimAndRoute } from "../steps/create.ts";
import type { CreateDeps } from "../steps/create-deps.ts";

/**
 * `CreateOperation`: the request validated, the create claimed and routed (the
 * `steps/create.ts` step, shared with a flexible link's payment), then the hosted page
 * marked when the create asked for one.
 */
export async function createOperation(d: CreateDeps, req: CreateOperationRequest, signal: AbortSignal) {
  const { row, replayed } = await claimAndRoute(d, parseCreate(req), signal);
  await markHostedPage(d.store, row, req.hostedPage);
  return { operation: toOperation(row), replayed };
}

/**
 * Records that a payment was handed out as a hosted link, when the create asked for one.
 * It runs after the create succeeded (so a link that failed shows no page); a replay
 * through a link records it as well. A bookkeeping column: no version bump, no event.
 */
async function markHostedPage(
  store: OperationStoreCore,
  row: Pick<OperationRow, "id" | "type" | "hosted_page">,
  requested: boolean,
): Promise<void> {
  if (requested && row.type === "payment" && !row.hosted_page) await store.markHostedPage(row.id);
}
