import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";

/** An error with an HTTP status and a stable public code, rendered as the one JSON error body. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly field: string | undefined;

  constructor(status: ContentfulStatusCode, code: string, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** Renders an ApiError as `{"error": {"code", "message", "field"?}}`. */
export function errorResponse(c: Context, err: ApiError) {
  const error: Record<string, string> = { code: err.code, message: err.message };
  if (err.field !== undefined) error.field = err.field;
  return c.json({ error }, err.status);
}

/** Reads a JSON body and validates it, turning any problem into a 400 naming the field. */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new ApiError(400, "invalid_json", "the body is not valid JSON");
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join(".") || undefined;
  throw new ApiError(400, "validation_failed", issue?.message ?? "invalid body", field);
}
