/** An HTTP answer that was not the expected 2xx, with the body for the message. */
export class HttpError extends Error {
  override readonly name = "HttpError";
  readonly status: number;
  readonly body: string;

  constructor(method: string, url: string, status: number, body: string) {
    super(`${method} ${url} answered ${status}: ${body.slice(0, 500)}`);
    this.status = status;
    this.body = body;
  }
}

/** Sends a JSON request and returns the parsed JSON answer (undefined for 204). */
export async function requestJson(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
): Promise<unknown> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
  });
  const text = await res.text();
  if (!res.ok) throw new HttpError(method, url, res.status, text);
  return text === "" ? undefined : JSON.parse(text);
}

/** A non-empty string field of a JSON answer; a miss says what came back instead. */
export function field(value: unknown, name: string): string {
  const v = ((value ?? {}) as Record<string, unknown>)[name];
  if (typeof v === "string" && v !== "") return v;
  throw new Error(`expected ${name} in ${JSON.stringify(value)}`);
}
