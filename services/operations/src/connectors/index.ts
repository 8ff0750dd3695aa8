import type { Connector } from "./connector.ts";
import { SandboxConnector } from "./sandbox.ts";

/** One connector per provider protocol, keyed by the `kind` a provider is registered with. */
const CONNECTORS: Readonly<Record<string, Connector>> = { sandbox: new SandboxConnector() };

/** The connector for a provider kind, or undefined when the gateway speaks no such protocol. */
export function connectorFor(kind: string): Connector | undefined {
  return Object.hasOwn(CONNECTORS, kind) ? CONNECTORS[kind] : undefined;
}
