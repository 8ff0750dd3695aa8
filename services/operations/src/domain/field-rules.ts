import { fieldProblem, type TextField } from "@gw/api";
import { ValidationError } from "./lifecycle/errors.ts";

/**
 * Throws the `ValidationError` naming `field` when `value` breaks the field's length and
 * character rule. The rules live in one place (libs/api fields.ts), which the edge's
 * request schemas use too; operations checks them again because it is what writes the row.
 */
export function checkField(field: TextField, value: string | undefined): void {
  const problem = value === undefined ? undefined : fieldProblem(field, value);
  if (problem) throw new ValidationError(problem, field);
}
