// Hostile input: receipts mutated at random (bytes flipped, cut, spliced, PDF keywords
// and lengths garbled) are submitted to the real service. Whatever the file, the service
// answers a defined verdict and stays up.

import { receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, submission } from "./testing/harness.ts";

const KEYWORDS = [
  "obj",
  "endobj",
  "stream",
  "endstream",
  "xref",
  "trailer",
  "startxref",
  "/Length",
  "/Filter",
  "%%EOF",
  "<<",
  ">>",
  "/Type",
  "R",
];

type Mutation =
  | { op: "flip"; at: number; value: number }
  | { op: "cut"; at: number }
  | { op: "insert"; at: number; bytes: Uint8Array }
  | { op: "keyword"; at: number; keyword: string }
  | { op: "number"; at: number; value: number }
  | { op: "duplicate"; at: number; length: number };

const position = fc.double({ min: 0, max: 1, noNaN: true });
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("flip" as const), at: position, value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant("cut" as const), at: position }),
  fc.record({ op: fc.constant("insert" as const), at: position, bytes: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ op: fc.constant("keyword" as const), at: position, keyword: fc.constantFrom(...KEYWORDS) }),
  fc.record({
    op: fc.constant("number" as const),
    at: position,
    value: fc.integer({ min: -1, max: 2 ** 31 }),
  }),
  fc.record({
    op: fc.constant("duplicate" as const),
    at: position,
    length: fc.integer({ min: 1, max: 4096 }),
  }),
);

function apply(base: Uint8Array, mutations: Mutation[]): Uint8Array {
  let b = Buffer.from(base);
  for (const m of mutations) {
    const at = Math.floor(m.at * b.length);
    switch (m.op) {
      case "flip":
        if (b.length > 0) b[Math.min(at, b.length - 1)] = m.value;
        break;
      case "cut":
        b = b.subarray(0, at);
        break;
      case "insert":
        b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
        break;
      case "keyword":
        b = Buffer.concat([b.subarray(0, at), Buffer.from(` ${m.keyword} `), b.subarray(at)]);
        break;
      case "number": {
        // Garble the next number after the position: lengths, offsets, object numbers.
        const text = b.toString("latin1");
        const match = /\d+/g;
        match.lastIndex = at;
        const found = match.exec(text);
        if (found)
          b = Buffer.concat([
            b.subarray(0, found.index),
            Buffer.from(String(m.value)),
            b.subarray(found.index + found[0].length),
          ]);
        break;
      }
      case "duplicate":
        b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + m.length), b.subarray(at)]);
        break;
    }
  }
  return new Uint8Array(b);
}

describe("fuzz: mutated receipts", () => {
  let h: Harness;
  let bases: Uint8Array[];

  beforeAll(async () => {
    h = await startHarness({ RECEIPT_PARSE_TIMEOUT_MS: "3000" });
    bases = [
      await receiptPdf(receiptSpec("sberbank", "phone")),
      await receiptPdf(receiptSpec("tbank", "card")),
    ];
  });

  afterAll(async () => {
    await h?.stop();
  });

  it("always ends in a defined verdict and never takes the service down", { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 1 }),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        async (which, mutations) => {
          const base = bases[which] as Uint8Array;
          const file = apply(base, mutations);
          if (file.length === 0) return; // An empty upload is a validation error, tested elsewhere.
          const { review } = await h.client.submitReceipt(submission(which === 0 ? "phone" : "card", file));
          expect(["completed", "rejected", "manual_check"]).toContain(review?.verdict);
          if (review?.verdict === "manual_check")
            expect(["potential_fake", "not_terminal"]).toContain(review.manualCheckReason);
          else expect(review?.manualCheckReason).toBeUndefined();
        },
      ),
      { numRuns: 30, seed: Number(process.env.FUZZ_SEED ?? 20261121) },
    );
    expect((await h.client.getStorageStats({})).files).toBeGreaterThan(0n);
  });
});
