import { METHODS } from "@gw/money";

/** A provider as registered through the admin API (`PUT /admin/v1/providers/{name}`). */
export interface ProviderConfig {
  name: string;
  /** Connector kind, which selects the implementation ("sandbox"). */
  kind: string;
  baseUrl: string;
  /** Shared secret: authenticates our calls and the provider's callbacks. Never logged. */
  credentials: string;
  methods: string[];
}

/** The route entry, provider name and connector kind of the self-matching pool. */
export const SELF_MATCHING = "self_matching";

/**
 * The pool as a provider: built in, never registered through the admin API (which
 * refuses the name), reached through its connector (`PoolConnector`, kind
 * `self_matching`) like any other provider. It takes every method.
 */
export const POOL_PROVIDER: Readonly<ProviderConfig> = Object.freeze({
  name: SELF_MATCHING,
  kind: SELF_MATCHING,
  baseUrl: "",
  credentials: "",
  methods: Object.keys(METHODS),
});

/** The built-in provider of that name (the pool), or undefined. */
export const builtInProvider = (name: string): ProviderConfig | undefined =>
  name === SELF_MATCHING ? { ...POOL_PROVIDER, methods: [...POOL_PROVIDER.methods] } : undefined;
