/**
 * The back office's one way into the gateway: the edge's admin API (`/admin/v1`) with
 * the admin bearer token, so every rule of the API (validation, errors, audit logging)
 * holds for the operator's forms too. Over HTTP in a deployment; tests may pass any
 * `fetch`, an edge app's `request` included.
 */

/** An answer of the admin API. */
export interface AdminAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON, read field by field.
  json: any;
}

export type Fetch = (url: string, init: RequestInit) => Response | Promise<Response>;

export interface AdminClient {
  call(method: string, path: string, body?: unknown): Promise<AdminAnswer>;
  /** A GET answered with a file (the receipt), as the raw response. */
  file(path: string): Promise<Response>;
}

/** Admin calls wait this long at most: an operator's page is not worth a hung request. */
const ADMIN_TIMEOUT_MS = 10_000;

export function adminClient(baseUrl: string, adminToken: string, fetcher: Fetch = fetch): AdminClient {
  const base = `${baseUrl.replace(/\/+$/, "")}/admin/v1`;
  const auth = { authorization: `Bearer ${adminToken}` };
  return {
    async call(method, path, body) {
      const res = await fetcher(`${base}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, json };
    },
    file: (path) =>
      Promise.resolve(
        fetcher(`${base}${path}`, {
          method: "GET",
          headers: auth,
          signal: AbortSignal.timeout(ADMIN_TIMEOUT_MS),
        }),
      ),
  };
}
