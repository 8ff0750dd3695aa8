import type { Connector } from "./connector.ts";
import { SandboxConnector } from "./sandbox.ts";

/** One connector per provider protocol, keyed by the `kind` a provider is registered with. */
const CONNECTORS: Readonly<Record<string, Connector>> = { sandbox: new SandboxConnector() };

/** The connector for a provider kind, or undefined when the gateway speaks no such protocol. */
export function connectorFor(kind: string): Connector | undefined {
  return Object.hasOwn(CONNECTORS, kind) ? CONNECTORS[kind] : undefined;
}

/**
 * The registry with the connectors that need the running service (the pool's,
 * `PoolConnector`, kind `self_matching`) besides the protocol connectors.
 */
export function connectorRegistry(
  withDeps: Readonly<Record<string, Connector>>,
): (kind: string) => Connector | undefined {
  const all: Readonly<Record<string, Connector>> = { ...CONNECTORS, ...withDeps };
  return (kind) => (Object.hasOwn(all, kind) ? all[kind] : undefined);
}
