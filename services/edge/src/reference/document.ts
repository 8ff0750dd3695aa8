import type { OpenAPIHono } from "@hono/zod-openapi";
import type { EdgeEnv } from "../env.ts";
import { OPENAPI_INFO } from "../openapi.ts";
import { ExampleMaker, errorExample, type JsonSchema } from "./examples.ts";
import { OPERATION_DOCS } from "./operations.ts";
import { webhooksSection } from "./webhooks.ts";

/**
 * The OpenAPI document the edge serves at /openapi.json and /docs renders: the routes'
 * own description (their zod schemas, summaries and statuses), completed for readers and
 * tools with what lives beside it: operation ids, summaries and descriptions where a route
 * has none (./operations.ts), an example for every request and answer, `security: []` on
 * the public routes, servers, the licence, tags in reading order (the merchant API first,
 * the admin API in its own group) and the 3.1 `webhooks` section (./webhooks.ts).
 */

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { content?: Record<string, MediaType> }>;
};
type MediaType = { schema?: JsonSchema; example?: unknown; examples?: unknown };
type Document = {
  info: Record<string, unknown>;
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
  [key: string]: unknown;
};

/** Tags in the order a reader meets them, and the groups the navigation shows. */
const TAG_GROUPS = [
  { name: "Merchant API", tags: ["merchant API", "webhooks"] },
  {
    name: "Admin API",
    tags: [
      "admin: accounts",
      "admin: configuration",
      "admin: receipt review",
      "admin: dead letters",
      "admin: operations",
      "admin: provider facts",
      "admin: audit",
    ],
  },
  { name: "Providers and probes", tags: ["providers", "probes"] },
] as const;

const TAG_DESCRIPTIONS: Record<string, string> = {
  "merchant API": "A shop's calls, authenticated by its `X-API-Key`. Amounts are decimal strings.",
  webhooks: "The events the gateway POSTs to the shop's webhook endpoint, signed per Standard Webhooks.",
  "admin: accounts": "Merchants, shops, API keys, shop settings and webhook deliveries (bearer admin token).",
  "admin: configuration": "Providers, routes, pricing, exchange rates and ledger adjustments.",
  "admin: receipt review": "Payments waiting for an operator's decision on a receipt.",
  "admin: dead letters": "Events a consumer could not apply, to retry or discard.",
  "admin: operations":
    "Finding an operation across shops, and the payouts waiting for an operator's decision.",
  "admin: provider facts": "Money a provider moved that the gateway did not expect.",
  "admin: audit": "Read-only views across shops for reconciliation.",
  providers: "Where providers report results.",
  probes: "Liveness, health and readiness for orchestrators.",
};

/** Paths in the order of the tag groups: /v1 first, then /admin, then the rest. */
function pathRank(path: string): number {
  if (path.startsWith("/v1/") || path.startsWith("/receipts/")) return 0;
  if (path.startsWith("/admin/")) return 1;
  return 2;
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

export function referenceDocument(app: OpenAPIHono<EdgeEnv>): Document {
  const doc = app.getOpenAPI31Document(OPENAPI_INFO) as unknown as Document;
  const { webhooks, schema: webhookEvent } = webhooksSection();
  const schemas: Record<string, JsonSchema> = {
    ...doc.components?.schemas,
    WebhookEvent: webhookEvent as JsonSchema,
  };
  doc.components = { ...doc.components, schemas };
  const examples = new ExampleMaker(schemas);

  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const extra = OPERATION_DOCS[`${method.toUpperCase()} ${path}`];
      if (extra) {
        op.operationId = extra.operationId;
        op.summary ??= extra.summary;
        op.description ??= extra.description;
      }
      op.description ??= op.summary;
      // A route without credentials is public: say so, rather than leave it unspecified.
      op.security ??= [];
      for (const media of Object.values(op.requestBody?.content ?? {})) {
        if (media.example === undefined && media.examples === undefined) {
          media.example = extra?.request ?? examples.of(media.schema);
        }
      }
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const json = response.content?.["application/json"];
        if (!json || json.example !== undefined || json.examples !== undefined) continue;
        json.example = status.startsWith("2")
          ? (extra?.response ?? examples.of(json.schema))
          : errorExample(status);
      }
    }
  }
  doc.paths = Object.fromEntries(Object.entries(doc.paths).sort(([a], [b]) => pathRank(a) - pathRank(b)));
  return {
    openapi: doc.openapi,
    info: {
      ...doc.info,
      license: { name: "Apache 2.0", identifier: "Apache-2.0" },
    },
    servers: [
      { url: "http://127.0.0.1:8080", description: "`./gw up` on this machine (the edge's default port)" },
    ],
    tags: TAG_GROUPS.flatMap((group) =>
      group.tags.map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    ),
    "x-tagGroups": TAG_GROUPS.map((group) => ({ name: group.name, tags: [...group.tags] })),
    paths: doc.paths,
    webhooks,
    components: doc.components,
  };
}
