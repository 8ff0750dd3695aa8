// Stand-ins for the gRPC services behind the edge, for the edge's and the back office's
// tests: partial implementations served with `createRouterTransport` (methods left out
// answer Unimplemented), an operation as they return it, and the configuration an admin
// reads. They test the callers' own mapping; the real services meet in the e2e suite.
import { Writable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import {
  type Operation,
  OperationSchema,
  type OperationsService,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { ProviderFactsService } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import type { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import type { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { type Logger, pino } from "pino";

/** Partial fake implementations; methods left out answer Unimplemented. */
export interface FakeServices {
  operations?: Partial<ServiceImpl<typeof OperationsService>>;
  ledger?: Partial<ServiceImpl<typeof LedgerService>>;
  webhooks?: Partial<ServiceImpl<typeof WebhooksService>>;
  matching?: Partial<ServiceImpl<typeof MatchingService>>;
  receipts?: Partial<ServiceImpl<typeof ReceiptsService>>;
  /** The DeadLetterService of each service that serves one, by the service's name. */
  deadLetters?: Partial<Record<string, Partial<ServiceImpl<typeof DeadLetterService>>>>;
  providerFacts?: Partial<ServiceImpl<typeof ProviderFactsService>>;
}

/** An operation as a downstream service would return it, with overrides. */
export function anOperation(overrides: Omit<Partial<Operation>, "$typeName" | "$unknown"> = {}): Operation {
  return create(OperationSchema, {
    operationId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
    merchantOperationId: "order-1",
    type: "payment",
    status: "pending",
    method: "WT_RUB_C2C",
    expectedAmount: "1000.00",
    actualAmount: "0.00",
    currency: "RUB",
    createdAt: "2026-11-21T10:00:00.000Z",
    updatedAt: "2026-11-21T10:00:00.000Z",
    ...overrides,
  });
}

/** A logger that keeps every line in memory, so tests can assert what is (never) logged. */
export function memoryLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: "debug" }, stream), lines };
}

/** The operation under manual check in `configFakes()`; its receipt file is `RECEIPT_FILE`. */
export const OP_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
export const RECEIPT_ID = "0191a5e4-7c1b-7b8e-9d4e-aaaaaaaaaaaa";
export const RECEIPT_FILE = new TextEncoder().encode("%PDF-1.4\n% a receipt\n%%EOF\n");

/**
 * The configuration an admin reads, as the services behind the edge answer it: one
 * provider (`acme`), one route, one price list, one manual check (`OP_ID`) and its
 * review; the receipt file (with a hostile content type and file name) is found for
 * `OP_ID` only.
 */
export const configFakes = (): FakeServices => ({
  operations: {
    listProviders: async () => ({
      providers: [
        {
          name: "acme",
          kind: "sandbox",
          baseUrl: "https://acme.example.test",
          methods: ["WT_RUB_C2C"],
          updatedAt: "2026-11-21T10:00:00.000Z",
        },
      ],
    }),
    listRoutes: async () => ({
      routes: [
        {
          method: "WT_RUB_PHONE",
          payin: ["acme", "self_matching"],
          payout: ["acme"],
          settlementCurrency: "USDT",
          updatedAt: "2026-11-21T10:00:00.000Z",
        },
      ],
    }),
    listManualChecks: async () => ({
      items: [
        {
          shopId: "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb",
          operation: anOperation({
            operationId: OP_ID,
            status: "manual_check",
            manualCheckReason: "potential_fake",
          }),
          receiptId: RECEIPT_ID,
          findings: [{ check: "incremental_update", outcome: "potential_fake", detail: "edited" }],
        },
      ],
    }),
  },
  ledger: {
    listPricing: async () => ({
      methods: [
        {
          method: "WT_RUB_PHONE",
          payin: [{ minAmount: "100", maxAmount: "50000", percent: "3.25", fixed: "7" }],
          payout: [],
        },
      ],
    }),
  },
  receipts: {
    getReview: async () => ({
      review: {
        actualAmount: "1499.00",
        layout: "sberbank",
        sha256: "ab",
        submittedAt: "2026-11-21T10:00:00Z",
      },
    }),
    getReviewFile: async (req) => {
      if (req.id.value !== OP_ID) throw new ConnectError("review not found", Code.NotFound);
      return {
        file: RECEIPT_FILE,
        contentType: "text/html",
        fileName: '"><script>.pdf',
        sha256: "ab",
        receiptId: RECEIPT_ID,
        shopId: "x",
      };
    },
  },
});
