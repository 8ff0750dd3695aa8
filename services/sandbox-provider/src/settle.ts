import { randomUUID } from "node:crypto";
import type { Sql } from "@gw/db";
import type { CallbackSender, DeliveryReport } from "./callbacks.ts";
import type { Behaviour } from "./db/schema.ts";
import { ApiError } from "./errors.ts";
import { CALLBACK_FAULTS, type FaultKind, faultFor, faultyLegs, roll, SETTLEMENT_FAULTS } from "./faults.ts";

/** What a settlement asks: explicit legs, or `profile` (the full amount, as the settlement faults say). */
export interface SettleRequest {
  reference: string;
  provider?: string | undefined;
  status: "completed" | "rejected";
  /** Leg amounts with scale 2; `"profile"` lets the provider's fault profile decide them. */
  legs: string[] | "profile";
}

/** The settle answer: the callback made and how its first delivery went. */
export interface Settlement {
  callback_id: string;
  provider: string;
  status: "completed" | "rejected";
  legs: string[];
  delivery: DeliveryReport;
}

interface OpenRow {
  id: string;
  provider: string;
  direction: "payin" | "payout";
  status: string;
  amount: string;
  callback_url: string;
  payin: Behaviour;
  payout: Behaviour;
}

/** Records one injected fault (the books count them by kind). */
export async function logFault(
  sql: Pick<Sql, "unsafe">,
  row: { provider: string; direction: string; reference: string },
  kind: FaultKind,
): Promise<void> {
  await sql.unsafe(
    "insert into sandbox.fault_log (provider, direction, reference, kind) values ($1, $2, $3, $4)",
    [row.provider, row.direction, row.reference, kind],
  );
}

const kopecks = (amount: string) => BigInt(amount.replace(".", ""));
const toAmount = (k: bigint) => `${k / 100n}.${(k % 100n).toString().padStart(2, "0")}`;

/**
 * Settles the open operation a provider holds under `reference`: records its legs and
 * final status and sends the result callback, applying the provider's callback and
 * settlement faults. Used by the control API and by the `completion_before_answer`
 * create fault.
 */
export async function settle(sql: Sql, sender: CallbackSender, req: SettleRequest): Promise<Settlement> {
  const settledAt = new Date();
  const callbackId = randomUUID();
  const { op, legs, callbackFault } = await sql.begin(async (tx) => {
    const open = await tx<OpenRow[]>`
      select o.id, o.provider, o.direction, o.status, o.amount::text as amount, o.callback_url, p.payin, p.payout
      from sandbox.operations o join sandbox.providers p on p.name = o.provider
      where o.reference = ${req.reference} and o.decision <> 'declined'
        and (${req.provider ?? null}::text is null or o.provider = ${req.provider ?? null})
      order by o.created_at
      for update of o`;
    const pending = open.filter((o) => o.status === "pending");
    if (open.length === 0) throw new ApiError(404, "not_found", "no provider took this operation");
    if (pending.length === 0 && open.some((o) => o.status === "withdrawn"))
      throw new ApiError(409, "withdrawn", "the operation was withdrawn: no money is taken for it");
    if (pending.length === 0) throw new ApiError(409, "already_settled", "the operation is already settled");
    if (pending.length > 1)
      throw new ApiError(409, "ambiguous", "several providers hold this operation: name one", "provider");
    const op = pending[0]!;
    const key = { provider: op.provider, direction: op.direction, reference: req.reference };
    const profile = op[op.direction].faults;
    let amounts: string[] = [];
    if (req.status === "completed" && req.legs === "profile") {
      const fault = faultFor(profile, "settlement", SETTLEMENT_FAULTS, key);
      const r = roll(profile?.seed ?? "", req.reference, "legs");
      amounts = faultyLegs(kopecks(op.amount), fault, r).map(toAmount);
      if (fault) await logFault(tx, key, `settlement.${fault}`);
    } else if (req.status === "completed") {
      amounts = req.legs as string[];
    }
    for (const [position, amount] of amounts.entries()) {
      await tx`
        insert into sandbox.legs (operation_id, position, id, amount, completed_at)
        values (${op.id}, ${position}, ${randomUUID()}, ${amount}, ${settledAt.toISOString()})`;
    }
    await tx`update sandbox.operations set status = ${req.status}, settled_at = ${settledAt.toISOString()} where id = ${op.id}`;
    const legRows = await tx<{ id: string; amount: string }[]>`
      select id, amount::text as amount from sandbox.legs where operation_id = ${op.id} order by position`;
    const callbackBody = JSON.stringify({
      callback_id: callbackId,
      reference: req.reference,
      status: req.status,
      legs: legRows.map((l) => ({ id: l.id, amount: l.amount, completed_at: settledAt.toISOString() })),
    });
    let callbackFault = faultFor(profile, "callback", CALLBACK_FAULTS, key);
    if (callbackFault === "rejection_after_completion" && req.status !== "completed")
      callbackFault = undefined;
    if (callbackFault) await logFault(tx, key, `callback.${callbackFault}`);
    // The row is created already claimed (its next attempt lies past one attempt's
    // deadline): this call makes the first attempt, the worker makes the retries. A
    // delayed callback is left to the worker after the fault's delay instead.
    const firstAttemptMs = callbackFault === "delayed" ? (profile?.slow_ms ?? 0) : sender.leaseMs;
    await tx`
      insert into sandbox.callbacks (id, operation_id, url, body, next_attempt_at)
      values (${callbackId}, ${op.id}, ${op.callback_url}, ${callbackBody},
              now() + make_interval(secs => ${firstAttemptMs / 1000}))`;
    return { op, legs: amounts, callbackFault };
  });

  let delivery: DeliveryReport;
  if (callbackFault === "delayed") {
    delivery = { delivered: false, attempts: 0, error: "delayed by the provider's fault profile" };
  } else {
    delivery = await sender.sendClaimed(callbackId);
    // A duplicate: the same callback (same id, same bytes) once more, as a provider that
    // did not see the first acknowledgement sends it.
    if (callbackFault === "duplicate") await sender.sendClaimed(callbackId);
  }
  if (callbackFault === "rejection_after_completion") {
    // A stale rejection of the same reference arrives after the completion (a provider's
    // earlier attempt overtaken by its later result). The provider's final fact stays
    // the completion: its status read and its books say completed.
    const staleId = randomUUID();
    await sql`
      insert into sandbox.callbacks (id, operation_id, url, body, next_attempt_at)
      values (${staleId}, ${op.id}, ${op.callback_url},
              ${JSON.stringify({ callback_id: staleId, reference: req.reference, status: "rejected", legs: [] })},
              now() + make_interval(secs => ${sender.leaseMs / 1000}))`;
    await sender.sendClaimed(staleId);
  }
  return { callback_id: callbackId, provider: op.provider, status: req.status, legs, delivery };
}
