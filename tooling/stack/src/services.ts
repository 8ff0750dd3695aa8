import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** How the runner knows a service is ready: gRPC health, or `GET /readyz` answering 204. */
export type Readiness = "grpc" | "http";

export interface ServiceSpec {
  name: string;
  readiness: Readiness;
  /** Default ports, from docs/architecture.md. */
  port: number;
  metricsPort: number;
}

/** Every process of the stack, in start order (the edge last: it calls the others). */
export const SERVICES: readonly ServiceSpec[] = [
  { name: "operations", readiness: "grpc", port: 50051, metricsPort: 9101 },
  { name: "matching", readiness: "grpc", port: 50052, metricsPort: 9102 },
  { name: "ledger", readiness: "grpc", port: 50053, metricsPort: 9103 },
  { name: "receipts", readiness: "grpc", port: 50054, metricsPort: 9104 },
  { name: "webhooks", readiness: "grpc", port: 50055, metricsPort: 9105 },
  { name: "checkout", readiness: "http", port: 8081, metricsPort: 9106 },
  { name: "sandbox-provider", readiness: "http", port: 8082, metricsPort: 9107 },
  { name: "edge", readiness: "http", port: 8080, metricsPort: 9100 },
  // The operators' back office: calls only the edge's admin API.
  { name: "backoffice", readiness: "http", port: 8084, metricsPort: 9109 },
];

export type ServiceName = (typeof SERVICES)[number]["name"];

/** The entry point of a service in the checkout at `root`. */
export const serviceMain = (root: string, name: string) => join(root, "services", name, "src", "main.ts");

/** True when the service's code is in the tree (some arrive later than others). */
export const serviceExists = (root: string, name: string) => existsSync(serviceMain(root, name));

/** Where each service listens, as chosen for one stack. */
export type PortPlan = Record<string, { port: number; metricsPort: number }>;

export interface StackSettings {
  databaseUrl: string;
  natsUrl: string;
  eventsPrefix: string;
  adminToken: string;
  /** The HMAC key of signed receipt links (at least 32 characters); unset, links cannot be signed. */
  receiptUrlSecret?: string;
  /** The HMAC key of flexible links' `k`; the same for every replica and restart of a stack. */
  flexibleLinkSecret?: string;
  logLevel: string;
  ports: PortPlan;
}

const url = (port: number) => `http://127.0.0.1:${port}`;

/**
 * The internal service-token key of the stacks this process runs: random per runner,
 * so every service of a stack (restarts included) shares it and no two runs do.
 */
const STACK_SERVICE_TOKEN_KEYS = `local:${randomBytes(32).toString("base64url")}`;

/** The public addresses of one stack. */
export function stackUrls(ports: PortPlan) {
  return {
    edge: url(ports.edge!.port),
    pay: url(ports.checkout!.port),
    backoffice: url(ports.backoffice!.port),
    sandbox: url(ports["sandbox-provider"]!.port),
    operations: url(ports.operations!.port),
    matching: url(ports.matching!.port),
    ledger: url(ports.ledger!.port),
    receipts: url(ports.receipts!.port),
    webhooks: url(ports.webhooks!.port),
  };
}
export type StackUrls = ReturnType<typeof stackUrls>;

/**
 * The environment of one service. Every service gets the common settings and the
 * address of every other service (each config schema picks the names it knows and
 * ignores the rest); only the ports it listens on differ. Names follow the services'
 * `src/config.ts`: gRPC services listen on GRPC_PORT, HTTP ones on PORT or HTTP_PORT.
 */
export function serviceEnv(spec: ServiceSpec, s: StackSettings): Record<string, string> {
  const urls = stackUrls(s.ports);
  const own = s.ports[spec.name]!;
  return {
    DATABASE_URL: s.databaseUrl,
    NATS_URL: s.natsUrl,
    EVENTS_PREFIX: s.eventsPrefix,
    LOG_LEVEL: s.logLevel,
    HOST: "127.0.0.1",
    OPERATIONS_URL: urls.operations,
    MATCHING_URL: urls.matching,
    LEDGER_URL: urls.ledger,
    RECEIPTS_URL: urls.receipts,
    WEBHOOKS_URL: urls.webhooks,
    // The edge: admin API credential and the base of hosted payment links.
    ADMIN_TOKEN: s.adminToken,
    // The back office reaches the gateway through the edge's admin API only.
    ADMIN_API_URL: urls.edge,
    PAY_URL: urls.pay,
    // Receipts: signed receipt links point at the edge's download route.
    ...(s.receiptUrlSecret ? { RECEIPT_URL_SECRET: s.receiptUrlSecret } : {}),
    RECEIPT_URL_BASE: urls.edge,
    // Operations: one key for the `k` of flexible links, so every replica and restart
    // answers a retried link with the same URL.
    ...(s.flexibleLinkSecret ? { FLEXIBLE_LINK_SECRET: s.flexibleLinkSecret } : {}),
    // Operations: providers post their results to the edge's callback route.
    PROVIDER_CALLBACK_BASE_URL: urls.edge,
    // Internal access: every gRPC call carries a service token signed with this key.
    SERVICE_TOKEN_KEYS: STACK_SERVICE_TOKEN_KEYS,
    // Webhooks: a local stack delivers to receivers on loopback, which production refuses.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    // The edge, checkout and the back office read PORT, the sandbox HTTP_PORT; each ignores the other.
    ...(spec.readiness === "grpc"
      ? { GRPC_PORT: String(own.port) }
      : { PORT: String(own.port), HTTP_PORT: String(own.port) }),
    METRICS_PORT: String(own.metricsPort),
  };
}
