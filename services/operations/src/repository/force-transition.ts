import type { OperationRow } from "../domain/model.ts";
import type { OperationPatch, OperationStoreCore } from "./store.ts";

/**
 * A store's private version-checked write (`transition`, under `applyFact`), for tests
 * that put a row in a state directly or check the lifecycle table's guard on a write no
 * fact would make. Both stores have it; production code never calls it.
 */
export function forceTransition(
  store: OperationStoreCore,
  before: OperationRow,
  patch: OperationPatch,
  options: { emit: boolean },
): Promise<OperationRow | undefined> {
  const write = store as unknown as {
    transition(b: OperationRow, p: OperationPatch, o: { emit: boolean }): Promise<OperationRow | undefined>;
  };
  return write.transition(before, patch, options);
}
