/**
 * The shape of the service's side state machines (flexible links, pool hand-offs,
 * withdrawals, provider facts), each one table like the lifecycle's (`lifecycle/table.ts`):
 * its states, the one it is written in, the ones nothing leaves, and every allowed move
 * with the event that makes it. The repository builds the guard of each status write from
 * the table (`fromStates`) and refuses a move the table does not have (`assertMove`); the
 * schema's `CHECK` on the status column lists the same states.
 */

/** One allowed move: in `from`, `event` leads to `to` (under `when`). */
export interface Move<S extends string, E extends string> {
  from: S;
  event: E;
  to: S;
  when: string;
  /**
   * Only for the rows this names (withdrawals: `passed_over`); a move without it applies
   * to every row.
   */
  only?: string;
}

/** A side state machine as one table. */
export interface StateMachine<S extends string, E extends string> {
  /** The table whose `status` column it is. */
  readonly table: string;
  readonly states: readonly S[];
  /** The status a row is inserted with. */
  readonly initial: S;
  /** States no move leaves (except a move `only` for some rows, which says so). */
  readonly terminal: ReadonlySet<S>;
  readonly moves: readonly Move<S, E>[];
}

/** A status write the machine's table does not allow: a bug, never a race. */
export class StateMoveRefusedError extends Error {
  readonly code = "state_move_refused";
  readonly table: string;
  readonly from: string;
  readonly to: string;

  constructor(table: string, from: string, to: string, id?: string) {
    super(`${table}${id ? ` ${id}` : ""}: ${from} → ${to} is not in its state table`);
    this.name = "StateMoveRefusedError";
    this.table = table;
    this.from = from;
    this.to = to;
  }
}

const applies = (move: { only?: string }, scope: string | undefined) =>
  move.only === undefined || move.only === scope;

/** Whether any move leads from `from` to `to` (for rows of `scope`, when given). */
export function canMove<S extends string, E extends string>(
  m: StateMachine<S, E>,
  from: S,
  to: S,
  scope?: string,
): boolean {
  return m.moves.some((r) => r.from === from && r.to === to && applies(r, scope));
}

/** Throws `StateMoveRefusedError` (naming the row `id`, when given) unless the table moves `from` to `to`. */
export function assertMove<S extends string, E extends string>(
  m: StateMachine<S, E>,
  from: string,
  to: string,
  scope?: string,
  id?: string,
): void {
  if (!isState(m, from) || !isState(m, to) || !canMove(m, from, to, scope))
    throw new StateMoveRefusedError(m.table, from, to, id);
}

/** Whether `s` is one of the machine's states. */
export function isState<S extends string, E extends string>(m: StateMachine<S, E>, s: string): s is S {
  return (m.states as readonly string[]).includes(s);
}

/**
 * The states a move to `to` by `event` may start from (by any event when none is given):
 * the `where status = any(…)` guard of the write that records it.
 */
export function fromStates<S extends string, E extends string>(
  m: StateMachine<S, E>,
  to: S,
  event?: E,
  scope?: string,
): S[] {
  const from = m.moves
    .filter((r) => r.to === to && (event === undefined || r.event === event) && applies(r, scope))
    .map((r) => r.from);
  return m.states.filter((s) => from.includes(s));
}

/** The states `from` may move to (for rows of `scope`, when given). */
export function targets<S extends string, E extends string>(
  m: StateMachine<S, E>,
  from: S,
  scope?: string,
): S[] {
  const to = m.moves.filter((r) => r.from === from && applies(r, scope)).map((r) => r.to);
  return m.states.filter((s) => to.includes(s));
}
