/**
 * Internal access on the gRPC hop: clients attach a signed service token, servers check
 * it and the access policy. See docs/architecture.md, "Internal access".
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { type AccessPolicy, GATEWAY_ACCESS_POLICY, isAllowed } from "./access-policy.ts";
import {
  SERVICE_TOKEN_TTL_MS,
  type ServiceKeySet,
  signServiceToken,
  verifyServiceToken,
} from "./service-token.ts";

/** Who a process calls as: its service name and the key set it signs with. */
export interface ServiceIdentity {
  name: string;
  keys: ServiceKeySet;
}

/** The health service stays open: probes and stock health checkers carry no token. */
const OPEN_SERVICES = new Set(["grpc.health.v1.Health"]);

let processIdentity: ServiceIdentity | undefined;
const scopedIdentity = new AsyncLocalStorage<ServiceIdentity>();

/**
 * Sets the identity this process's clients call with, for clients created outside
 * `runAsService` (the HTTP services set it once at start). Undefined clears it.
 */
export function setServiceIdentity(identity: ServiceIdentity | undefined): void {
  processIdentity = identity;
}

/**
 * Runs `fn` (typically a service's setup) so that clients created inside it call as
 * `identity`. Several services in one process (tests) thus keep their own names.
 */
export function runAsService<T>(identity: ServiceIdentity | undefined, fn: () => T): T {
  return identity === undefined ? fn() : scopedIdentity.run(identity, fn);
}

/** The identity a client created now calls with: the scoped one, else the process's (late-bound). */
export function resolveIdentity(): ServiceIdentity | (() => ServiceIdentity | undefined) {
  return scopedIdentity.getStore() ?? (() => processIdentity);
}

/** Tokens are renewed this long before they end, so one never expires in flight. */
const RENEW_BEFORE_MS = 60_000;

/**
 * Attaches `authorization: Bearer <service token>` to every call, one token per target
 * service, reused until a minute before it ends. Without an identity (internal access
 * not configured) calls go out without a token.
 */
export function serviceTokenInterceptor(
  identity: ServiceIdentity | (() => ServiceIdentity | undefined),
): Interceptor {
  const cache = new Map<string, { bearer: string; renewAt: number; keys: ServiceKeySet; caller: string }>();
  return (next) => (req) => {
    const id = typeof identity === "function" ? identity() : identity;
    if (id !== undefined && !req.header.has("authorization")) {
      const audience = req.service.typeName;
      const now = Date.now();
      let entry = cache.get(audience);
      if (entry === undefined || entry.renewAt <= now || entry.keys !== id.keys || entry.caller !== id.name) {
        const token = signServiceToken(id.keys, { caller: id.name, audience }, now);
        entry = {
          bearer: `Bearer ${token}`,
          renewAt: now + SERVICE_TOKEN_TTL_MS - RENEW_BEFORE_MS,
          keys: id.keys,
          caller: id.name,
        };
        cache.set(audience, entry);
      }
      req.header.set("authorization", entry.bearer);
    }
    return next(req);
  };
}

export interface InternalAuthOptions {
  keys: ServiceKeySet;
  /** Defaults to the gateway's policy. */
  policy?: AccessPolicy;
}

/** Verified tokens kept per server, so a caller's reused token costs one map lookup. */
const VERIFIED_CACHE_MAX = 1024;

/**
 * Refuses a call without a valid service token for this service (UNAUTHENTICATED) and
 * one whose caller the policy does not allow for the method (PERMISSION_DENIED). The
 * health service stays open. `audiences` are the full names of the services served.
 */
export function internalAuthInterceptor(
  options: InternalAuthOptions,
  audiences: Iterable<string>,
): Interceptor {
  const policy = options.policy ?? GATEWAY_ACCESS_POLICY;
  const served = new Set(audiences);
  const verified = new Map<string, { caller: string; aud: string; expMs: number }>();
  // Not async: a call that passes goes on without a promise of its own; a refusal is a
  // rejected promise, as from any interceptor.
  return (next) => (req) => {
    const service = req.service.typeName;
    if (OPEN_SERVICES.has(service)) return next(req);
    const refusal = refuse(req.header.get("authorization"), service, req.method.name);
    return refusal === undefined ? next(req) : Promise.reject(refusal);
  };

  /** Why the call is refused, or undefined if it may go on. */
  function refuse(header: string | null, service: string, method: string): ConnectError | undefined {
    if (header === null || !header.startsWith("Bearer "))
      return new ConnectError("a service token is required", Code.Unauthenticated);
    const token = header.slice(7);
    const now = Date.now();
    let known = verified.get(token);
    if (known !== undefined && known.expMs <= now) {
      verified.delete(token);
      known = undefined;
    }
    if (known === undefined) {
      const verdict = verifyServiceToken(options.keys, token, served, now);
      if (!verdict.ok) return new ConnectError(verdict.reason, Code.Unauthenticated);
      // Bounded: a flood of distinct valid tokens only costs re-verification.
      if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
      known = { caller: verdict.claims.iss, aud: verdict.claims.aud, expMs: verdict.claims.exp * 1000 };
      verified.set(token, known);
    }
    if (known.aud !== service)
      return new ConnectError("service token is for another service", Code.Unauthenticated);
    if (!isAllowed(policy, service, method, known.caller))
      return new ConnectError(`${known.caller} may not call ${service}/${method}`, Code.PermissionDenied);
    return undefined;
  }
}
