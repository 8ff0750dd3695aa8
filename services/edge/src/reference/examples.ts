import type { PublicErrorCode } from "@gw/api";
/**
 * Examples for the API reference, made from the document's own schemas: a value for every
 * property, taken from the schema's `example` when it has one, else from its enum, its
 * format or its type. The merchant API's main calls have hand-written examples instead
 * (./operations.ts); these fill in the rest, so every request and response has one.
 */

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
  format?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
  minimum?: number;
};

const BY_FORMAT: Record<string, string> = {
  uuid: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  "date-time": "2026-01-15T10:30:00.000Z",
  date: "2026-01-15",
  uri: "https://shop.example/webhooks",
  url: "https://shop.example/webhooks",
  email: "ops@shop.example",
  binary: "(the file's bytes)",
};

/** By property name, for plain strings the schema says nothing more about. */
const BY_NAME: Record<string, string> = {
  shop_id: "0191a5e4-1111-7b8e-9d4e-3f2a1b0c9d8e",
  merchant_id: "0191a5e4-2222-7b8e-9d4e-3f2a1b0c9d8e",
  operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  event_id: "0191a5e4-3333-7b8e-9d4e-3f2a1b0c9d8e",
  key_id: "0191a5e4-4444-7b8e-9d4e-3f2a1b0c9d8e",
  receipt_id: "0191a5e4-5555-7b8e-9d4e-3f2a1b0c9d8e",
  id: "0191a5e4-6666-7b8e-9d4e-3f2a1b0c9d8e",
  merchant_operation_id: "order-1001",
  client_id: "user-42",
  currency: "RUB",
  settlement_currency: "RUB",
  method: "WT_RUB_C2C",
  name: "sandbox",
  provider: "sandbox",
  operator: "alice@ops",
  reason: "checked with the provider's statement",
  created_at: "2026-01-15T10:30:00.000Z",
  updated_at: "2026-01-15T10:31:00.000Z",
  expires_at: "2026-01-15T10:45:00.000Z",
  base_url: "http://127.0.0.1:8090",
  webhook_url: "https://shop.example/webhooks",
  payment_url: "http://127.0.0.1:8081/pay/0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  number: "4111111111111111",
  error: "connection refused",
};

const AMOUNT = /amount|balance|reserved|booked|clearing|sum|fixed|percent|rate/;

export class ExampleMaker {
  private readonly schemas: Record<string, JsonSchema>;
  constructor(schemas: Record<string, JsonSchema>) {
    this.schemas = schemas;
  }

  /** An example value for `schema` (found under the property `name`, when it is one). */
  of(schema: JsonSchema | undefined, name = "", depth = 0): unknown {
    if (!schema || depth > 8) return null;
    if (schema.$ref) {
      const target = this.schemas[schema.$ref.replace("#/components/schemas/", "")];
      return this.of(target, name, depth + 1);
    }
    if (schema.example !== undefined) return schema.example;
    if (schema.examples?.length) return schema.examples[0];
    if (schema.const !== undefined) return schema.const;
    if (schema.enum?.length) return schema.enum[0];
    if (schema.default !== undefined) return schema.default;
    const variants = schema.anyOf ?? schema.oneOf;
    if (variants?.length) {
      const first = variants.find((v) => v.type !== "null") ?? variants[0];
      return this.of(first, name, depth + 1);
    }
    if (schema.allOf?.length) {
      return Object.assign({}, ...schema.allOf.map((part) => this.of(part, name, depth + 1) ?? {}));
    }
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
    switch (type) {
      case "object": {
        const out: Record<string, unknown> = {};
        for (const [key, property] of Object.entries(schema.properties ?? {})) {
          out[key] = this.of(property, key, depth + 1);
        }
        return out;
      }
      case "array":
        return [this.of(schema.items, name, depth + 1)];
      case "integer":
      case "number":
        return schema.minimum ?? 1;
      case "boolean":
        return true;
      case "string":
        if (schema.format && BY_FORMAT[schema.format]) return BY_FORMAT[schema.format];
        if (BY_NAME[name]) return BY_NAME[name];
        if (AMOUNT.test(name)) return "1000.00";
        if (name.endsWith("_at")) return BY_FORMAT["date-time"];
        if (name.endsWith("_id")) return BY_FORMAT.uuid;
        return name ? name.replaceAll("_", " ") : "text";
      default:
        return schema.properties ? this.of({ ...schema, type: "object" }, name, depth) : null;
    }
  }
}

/**
 * The code a merchant most often sees with each error status the API declares, for the
 * error examples: a real code (`PublicErrorCode`), so an example cannot show one the
 * gateway never answers with.
 */
const ERROR_EXAMPLES: Record<string, { code: PublicErrorCode; message: string; field?: string }> = {
  "400": {
    code: "validation_failed",
    message: "amount must be a decimal with at most 2 places",
    field: "amount",
  },
  "401": { code: "invalid_api_key", message: "invalid api key" },
  "403": {
    code: "key_not_authorized",
    message: "this api key is not authorized for the availability endpoints",
  },
  "404": { code: "operation_not_found", message: "operation not found" },
  "405": { code: "method_not_allowed", message: "GET is not allowed here" },
  "410": { code: "receipt_url_expired", message: "the receipt link has expired" },
  "412": { code: "idempotency_conflict", message: "merchant_operation_id was used with another body" },
  "413": { code: "payload_too_large", message: "the request body is larger than allowed" },
  "415": { code: "unsupported_media_type", message: "the body must be application/json" },
  "429": { code: "rate_limited", message: "too many requests" },
  "500": { code: "internal", message: "internal error" },
  "503": { code: "dependency_unavailable", message: "unavailable: operations" },
};

export function errorExample(status: string): unknown {
  const error = ERROR_EXAMPLES[status] ?? ERROR_EXAMPLES["500"];
  return { error, request_id: "0b8f3f0e-6c1e-4a59-a0c3-0d8b3d0a3c11" };
}
