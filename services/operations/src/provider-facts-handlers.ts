import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type {
  ListProviderFactsRequest,
  ProviderFactsService,
  ResolveProviderFactRequest,
} from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { ValidationError } from "./domain/lifecycle/errors.ts";
import type { OperationStore } from "./repository/operations.ts";
import {
  listProviderFacts,
  RESOLUTIONS,
  type Resolution,
  resolveProviderFact,
} from "./steps/provider-facts.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TEXT_MAX = 2048;

/**
 * gateway.operations.v1.ProviderFactsService: the operator's queue of provider facts. Its
 * domain errors reach the client through the catalogue (`withErrorCatalogue` in app.ts).
 */
export class ProviderFactsHandlers implements ServiceImpl<typeof ProviderFactsService> {
  readonly #d: { store: OperationStore; logger: Logger };

  constructor(deps: { store: OperationStore; logger: Logger }) {
    this.#d = deps;
  }

  async listProviderFacts(req: ListProviderFactsRequest) {
    const status = req.status || undefined;
    if (status !== undefined && status !== "open" && status !== "resolved")
      throw new ValidationError("status must be open or resolved", "status");
    const limit = req.limit === 0 ? 100 : req.limit;
    if (limit < 1 || limit > 500) throw new ValidationError("limit must be 1..500", "limit");
    const operationId = req.operationId || undefined;
    if (operationId !== undefined && !UUID.test(operationId))
      throw new ValidationError("operation_id must be a UUID", "operation_id");
    return { providerFacts: await listProviderFacts(this.#d.store, { status, operationId, limit }) };
  }

  async resolveProviderFact(req: ResolveProviderFactRequest) {
    if (!UUID.test(req.id)) throw new ValidationError("id must be a UUID", "id");
    if (!(RESOLUTIONS as readonly string[]).includes(req.action))
      throw new ValidationError(`action must be one of ${RESOLUTIONS.join(", ")}`, "action");
    for (const field of ["reason", "operator"] as const) {
      const value = req[field].trim();
      if (value === "" || value.length > TEXT_MAX)
        throw new ValidationError(`${field} must be 1..${TEXT_MAX} characters`, field);
    }
    const { fact, replayed } = await resolveProviderFact(this.#d, {
      id: req.id,
      action: req.action as Resolution,
      reason: req.reason.trim(),
      operator: req.operator.trim(),
    });
    return { providerFact: fact, replayed };
  }
}
