/** The shop a `/v1` request acts for, resolved from its API key and nothing else. */
export interface Scope {
  merchantId: string;
  shopId: string;
  keyId: string;
  /** A restricted key's optional endpoint groups (`availability`, `flexible_links`); null: all. */
  permissions: string[] | null;
}

/** The typed Hono context variables every edge route can read. */
export interface EdgeVariables {
  requestId: string;
  /** Set by the API key middleware on every `/v1` route. */
  scope: Scope;
  /** The parsed JSON body, set by the body middleware; undefined when the request had none. */
  body: unknown;
}

/** The Hono environment of the edge. */
export interface EdgeEnv {
  Variables: EdgeVariables;
}
