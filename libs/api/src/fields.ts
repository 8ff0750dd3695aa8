/**
 * The rules of the merchant API's identifier and free-text fields, stated once: the edge's
 * request schemas (services/edge/src/validation.ts, routes/flexible.ts) and operations'
 * own checks (a create through `createProblem` of create.ts; flexible.ts, cancel) both
 * call `fieldProblem`, and the OpenAPI document describes each field with `fieldRuleText`.
 *
 * Every rule keeps a value storable where it ends up (Postgres `text` columns, the unique
 * index on (shop_id, merchant_operation_id)):
 * - no NUL anywhere (Postgres text cannot hold U+0000);
 * - well-formed Unicode: a lone surrogate half (legal in JSON's `\ud800`) has no UTF-8 form
 *   and would be stored as U+FFFD, a different key than the merchant sent;
 * - identifiers: no C0 control character (U+0000 to U+001F) and no DEL (U+007F), which no
 *   identifier needs and which break logs, CSV exports and the back office;
 * - a length: identifiers and names in characters (Unicode code points, as JSON Schema's
 *   `maxLength` counts them), the cancel reason in UTF-8 bytes (the spec's 2048). 255
 *   characters is at most 1,020 UTF-8 bytes, well inside a btree entry (about 2,700 bytes).
 *
 * `merchant_operation_id`'s 255 is a choice (the spec says "any non-empty string"): Stripe's
 * idempotency keys are at most 255 characters, and so are the gateway's.
 */
export type TextField = "merchant_operation_id" | "client_id" | "number" | "name" | "bankname" | "reason";

export interface FieldRule {
  /** An identifier has no control characters; free text may (newlines in a reason). */
  kind: "identifier" | "text";
  maxChars?: number;
  maxBytes?: number;
}

export const FIELD_RULES: Record<TextField, FieldRule> = {
  merchant_operation_id: { kind: "identifier", maxChars: 255 },
  client_id: { kind: "identifier", maxChars: 255 },
  number: { kind: "identifier", maxChars: 64 },
  bankname: { kind: "identifier", maxChars: 64 },
  name: { kind: "text", maxChars: 255 },
  reason: { kind: "text", maxBytes: 2048 },
};

/** A C0 control character (U+0000 to U+001F) or DEL (U+007F). */
const hasControl = (value: string) => {
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0x20 || unit === 0x7f) return true;
  }
  return false;
};

const codePoints = (value: string) => {
  let n = 0;
  for (const _ of value) n++;
  return n;
};

/** What is wrong with `value` as `field`, in the words of a `400 validation_failed`; undefined when nothing. */
export function fieldProblem(field: TextField, value: string): string | undefined {
  return ruleProblem(field, FIELD_RULES[field], value);
}

/**
 * The same for a field of another API under a rule of its own (the admin API's names,
 * operators and reasons: free text with a length, in `services/edge/src/routes/admin-*.ts`).
 */
export function ruleProblem(field: string, rule: FieldRule, value: string): string | undefined {
  if (!value.isWellFormed()) return `${field} must be well-formed Unicode (no lone surrogate)`;
  if (rule.kind === "identifier" && hasControl(value))
    return `${field} must not contain control characters (U+0000 to U+001F, U+007F)`;
  if (value.includes("\u0000")) return `${field} must not contain the NUL character`;
  if (rule.maxChars !== undefined && codePoints(value) > rule.maxChars)
    return `${field} must be at most ${rule.maxChars} characters`;
  if (rule.maxBytes !== undefined && Buffer.byteLength(value, "utf8") > rule.maxBytes)
    return `${field} must be at most ${rule.maxBytes} bytes`;
  return undefined;
}

/** The rule in a sentence, for the OpenAPI document. */
export function fieldRuleText(field: TextField): string {
  const rule = FIELD_RULES[field];
  const length =
    rule.maxChars !== undefined
      ? `at most ${rule.maxChars} characters`
      : `at most ${rule.maxBytes} bytes (UTF-8)`;
  const chars =
    rule.kind === "identifier" ? "no control characters (U+0000 to U+001F, U+007F)" : "no NUL character";
  return `${length[0]?.toUpperCase()}${length.slice(1)}; ${chars}; well-formed Unicode.`;
}
