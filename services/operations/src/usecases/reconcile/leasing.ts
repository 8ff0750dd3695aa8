/**
 * How a reconciler pass takes its rows: `parallel` workers, each leasing its next row once
 * its last is handled, up to `limit` rows in all. Each row is leased just before it is
 * handled, for one handling, so a replica that dies mid-pass delays only the rows in its
 * hands. A failed lease of a next row ends the leasing (`onLeaseError`): the pass ends with
 * the rows it holds, and the next pass leases again; a failed first lease fails the pass.
 * Answers how many rows were leased (and handled).
 */
export async function leaseAndHandle<R>(o: {
  limit: number;
  parallel: number;
  lease: (count: number) => Promise<R[]>;
  handle: (row: R) => Promise<void>;
  /** True once no further row should be leased (the reconciler is stopping). */
  stopped: () => boolean;
  onLeaseError: (err: unknown) => void;
}): Promise<number> {
  const firstCount = Math.min(o.parallel, o.limit);
  const first = await o.lease(firstCount);
  let leased = first.length;
  let moreDue = first.length === firstCount;
  const worker = async (start: R) => {
    for (let row: R | undefined = start; row !== undefined; ) {
      await o.handle(row);
      row = undefined;
      if (!moreDue || leased >= o.limit || o.stopped()) return;
      leased++;
      try {
        [row] = await o.lease(1);
      } catch (err) {
        o.onLeaseError(err);
      }
      if (row === undefined) {
        leased--;
        moreDue = false;
      }
    }
  };
  await Promise.all(first.map(worker));
  return leased;
}

/**
 * How long a row is held: one handling at the slowest (a reroute takes up to the create
 * budget; a pending payin past its expiry, a status question and a withdrawal) and a
 * margin for a slow write or a stalled event loop, so no other replica picks a row still
 * in hand. A crash delays only the rows its replica held, and only by this much.
 */
export const rowLeaseMs = (budgetMs: number, attemptTimeoutMs: number) =>
  Math.max(budgetMs, 2 * attemptTimeoutMs) + 30_000;
