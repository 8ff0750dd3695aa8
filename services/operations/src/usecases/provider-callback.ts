import type { Logger } from "@gw/log";
import type { HandleProviderCallbackRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { CallbackRejectedError, type Connector } from "../connectors/connector.ts";
import {
  BadSignatureError,
  ProviderNotFoundError,
  StillRoutingError,
  ValidationError,
} from "../domain/lifecycle/errors.ts";
import type { OperationStore } from "../repository/operations.ts";
import { applyProviderResult } from "../steps/provider-results.ts";

/**
 * `HandleProviderCallback`: a provider's callback, verified by its connector, recorded
 * once (a replay changes nothing) and applied as a provider result in the same
 * transaction. Throws `ProviderNotFoundError`, `BadSignatureError`, `ValidationError`
 * (malformed), and `StillRoutingError` when the provider called back before the create
 * recorded its answer: the callback is then not recorded, and the provider's retry
 * applies it once routing is written.
 */
export async function handleProviderCallback(
  d: { store: OperationStore; logger: Logger; connectorFor: (kind: string) => Connector | undefined },
  req: HandleProviderCallbackRequest,
): Promise<Record<string, never>> {
  const provider = await d.store.provider(req.provider);
  const connector = provider && d.connectorFor(provider.kind);
  if (!provider || !connector) throw new ProviderNotFoundError();
  let result: ReturnType<Connector["parseCallback"]>;
  try {
    result = connector.parseCallback(provider, req.body, req.headers, new Date());
  } catch (err) {
    if (err instanceof CallbackRejectedError) throw new BadSignatureError();
    throw new ValidationError("malformed callback");
  }
  await d.store.transaction(async (tx) => {
    const fresh = await d.store.recordCallback(tx, {
      provider: provider.name,
      callbackId: result.callbackId,
      operationId: result.operationId,
    });
    if (!fresh) return; // a replay: applied before
    const outcome = await applyProviderResult(d, tx, provider.name, result, "callback");
    if (outcome === "not_routed" && (await d.store.findAnyById(result.operationId, tx))?.status === "routing")
      throw new StillRoutingError();
  });
  return {};
}
