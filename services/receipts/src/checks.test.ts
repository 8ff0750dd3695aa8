// Every kind of receipt the issue names, submitted to the real service: the verdict and
// exactly which checks fired. The table in README.md is produced from this run
// (RECEIPTS_UPDATE_README=1 rewrites it; otherwise the test fails when it is stale).

import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import {
  type Bank,
  buildReceipt,
  corrupt,
  editAmountIncrementally,
  hugePdf,
  imageOnlyPdf,
  notPdf,
  type Rail,
  type ReceiptSpec,
  receiptPdf,
  receiptSpec,
} from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, submission } from "./testing/harness.ts";
import { EDITORS, RESAVERS, replacePageByUpdate, type WriterProfile, writeAs } from "./testing/writers.ts";

interface Case {
  name: string;
  rail: Rail;
  file: () => Promise<Uint8Array> | Uint8Array;
  overrides?: Record<string, unknown>;
  /** Runs first for the same file or transaction on another operation. */
  before?: (h: Harness, file: Uint8Array) => Promise<void>;
  verdict: "completed" | "rejected" | "manual_check";
  reason?: "potential_fake" | "not_terminal";
  checks: string[];
}

const genuine = (bank: Bank, rail: Rail): Case => ({
  name: `genuine ${bank} ${rail === "card" ? "card-to-card" : "SBP"}`,
  rail,
  file: () => receiptPdf(receiptSpec(bank, rail)),
  verdict: "completed",
  checks: [],
});

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000);
const shared = receiptSpec("tbank", "phone");
const relaid = receiptSpec("sberbank", "phone");
const cut = receiptSpec("sberbank", "card", { recipientCard: "2202201234565555" });
const CUT_REQUISITES = { number: "2202201234565555", name: "Иван Иванович Иванов" };
const EDITOR = EDITORS.find((w) => w.producer.startsWith("PDF Expert")) ?? EDITORS[0];

/** `spec` drawn and written by the program `w`, with `producer` in its metadata. */
async function rewrite(spec: ReceiptSpec, w: WriterProfile | undefined, producer: string) {
  if (!w) throw new Error("no such writer");
  return writeAs((await buildReceipt(spec)).doc, w, {
    producer,
    creator: w.creator,
    created: spec.createdAt,
  });
}

const CASES: Case[] = [
  ...(["sberbank", "tbank", "vtb", "alfabank"] as const).flatMap((bank) => [
    genuine(bank, "card"),
    genuine(bank, "phone"),
  ]),
  { ...genuine("ozon", "card"), name: "genuine unknown bank (fallback layout)" },
  {
    name: "unknown bank without a recipient line (fallback unsure)",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("ozon", "phone", { omit: ["Телефон"] })),
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["fields_missing"],
  },
  {
    name: "transfer in progress (T-Bank SBP)",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("tbank", "phone", { status: "in_progress" })),
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["transfer_in_progress"],
  },
  {
    name: "transfer declined (VTB card)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("vtb", "card", { status: "failed" })),
    verdict: "rejected",
    checks: ["transfer_failed"],
  },
  {
    name: "amount edited in an incremental update (Sber card)",
    rail: "card",
    file: () => editAmountIncrementally(receiptSpec("sberbank", "card", { amount: "150.00" }), "1 500,00 ₽"),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["incremental_update", "text_overlaid", "text_inconsistent", "amount_mismatch"],
  },
  {
    name: "saved by an image editor (Alfa card, Producer Adobe Photoshop)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("alfabank", "card", { producer: "Adobe Photoshop 25.4 (Windows)" })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["editor_wrote"],
  },
  {
    name: "genuine, from a report engine no list names (Sber card, Producer Zenit Report Server 3.1)",
    rail: "card",
    file: () =>
      receiptPdf(receiptSpec("sberbank", "card", { producer: "Zenit Report Server 3.1", creator: "ZRS" })),
    verdict: "completed",
    checks: [],
  },
  {
    name: "created and modified days apart (T-Bank card): a note, never a hold",
    rail: "card",
    file: () => {
      const spec = receiptSpec("tbank", "card");
      return receiptPdf({ ...spec, modifiedAt: new Date(spec.createdAt.getTime() + 3 * 86_400_000) });
    },
    verdict: "completed",
    checks: ["dates_apart"],
  },
  {
    name: "transfer in progress, saved by an editor (T-Bank SBP, PDF Expert)",
    rail: "phone",
    file: () =>
      receiptPdf(receiptSpec("tbank", "phone", { status: "in_progress", producer: "PDF Expert 3.10.6" })),
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["editor_wrote", "transfer_in_progress"],
  },
  {
    name: "transfer declined, saved by an editor (VTB card, PDF Expert)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("vtb", "card", { status: "failed", producer: "PDF Expert 3.10.6" })),
    verdict: "rejected",
    checks: ["editor_wrote", "transfer_failed"],
  },
  {
    name: "wrong recipient phone (Sber SBP)",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("sberbank", "phone", { recipientPhone: "+79990001122" })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["recipient_mismatch"],
  },
  {
    name: "wrong recipient card (VTB card)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("vtb", "card", { recipientCard: "2200700011119999" })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["recipient_mismatch"],
  },
  {
    name: "wrong recipient bank (Alfa SBP to Т-Банк)",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("alfabank", "phone", { recipientBank: "Т-Банк" })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["recipient_mismatch"],
  },
  {
    name: "another amount (Alfa SBP, 1 000,00 for 1 500,00)",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("alfabank", "phone", { amount: "1000.00" })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["amount_mismatch"],
  },
  {
    name: "dated before the payment window (Sber card, 3 days old)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("sberbank", "card", { at: daysAgo(3) })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["date_outside_window"],
  },
  {
    name: "same file used for another payment",
    rail: "phone",
    file: () => receiptPdf(receiptSpec("vtb", "phone")),
    before: async (h, file) => {
      await h.client.submitReceipt(submission("phone", file));
    },
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["receipt_reused", "transaction_reused"],
  },
  {
    name: "same bank transaction, another file (T-Bank SBP)",
    rail: "phone",
    file: () => receiptPdf({ ...shared, createdAt: new Date(shared.createdAt.getTime() + 1000) }),
    before: async (h) => {
      await h.client.submitReceipt(submission("phone", await receiptPdf(shared)));
    },
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["transaction_reused"],
  },
  {
    name: "rewritten by an editor (VTB SBP, Producer PDF Expert)",
    rail: "phone",
    file: () => rewrite(receiptSpec("vtb", "phone"), EDITOR, "PDF Expert 3.10.6"),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["editor_wrote"],
  },
  {
    name: "rewritten whole by an editor that left no name, no overlay, no update (Sber card): no evidence, completes",
    rail: "card",
    file: () => rewrite(receiptSpec("sberbank", "card"), EDITOR, "JasperReports Library version 6.20.6"),
    verdict: "completed",
    checks: [],
  },
  {
    name: "content replaced in an update hidden in an object stream, earlier %%EOF blanked (T-Bank card)",
    rail: "card",
    file: async () =>
      replacePageByUpdate(
        await receiptPdf(receiptSpec("tbank", "card", { amount: "150.00" })),
        (await buildReceipt(receiptSpec("tbank", "card"))).doc,
        { objectStream: true, hideEarlierEof: true },
      ),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["incremental_update"],
  },
  {
    name: "assembled from two banks (Sber receipt with VTB's footer)",
    rail: "card",
    file: () => receiptPdf(receiptSpec("sberbank", "card", { assembly: { footer: "vtb" } })),
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["mixed_banks"],
  },
  {
    name: "same transfer again with its identifiers relaid (Sber SBP)",
    rail: "phone",
    file: () =>
      receiptPdf({ ...relaid, relaid: true, createdAt: new Date(relaid.createdAt.getTime() + 60_000) }),
    before: async (h) => {
      await h.client.submitReceipt(submission("phone", await receiptPdf(relaid)));
    },
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["transaction_reused"],
  },
  {
    name: "same transfer again with its identifiers left out (Sber card, no document number)",
    rail: "card",
    file: () => receiptPdf({ ...cut, omit: ["Номер документа", "Код авторизации"] }),
    overrides: { requisites: CUT_REQUISITES },
    before: async (h) => {
      await h.client.submitReceipt(submission("card", await receiptPdf(cut), { requisites: CUT_REQUISITES }));
    },
    verdict: "manual_check",
    reason: "potential_fake",
    checks: ["transaction_reused"],
  },
  {
    name: "re-saved by a phone's share sheet (Alfa SBP, iOS Quartz PDFContext)",
    rail: "phone",
    file: () =>
      rewrite(
        receiptSpec("alfabank", "phone"),
        RESAVERS[0],
        "iOS Version 17.4.1 (Build 21E236) Quartz PDFContext",
      ),
    verdict: "completed",
    checks: [],
  },
  {
    name: 'the bank\'s other wording (VTB card: "Сумма", "Успешно", a long date)',
    rail: "card",
    file: () => receiptPdf(receiptSpec("vtb", "card", { wording: 2 })),
    verdict: "completed",
    checks: [],
  },
  {
    name: "image-only PDF (a screenshot)",
    rail: "card",
    file: imageOnlyPdf,
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["no_text"],
  },
  {
    name: "not a PDF (a JPEG)",
    rail: "card",
    file: notPdf,
    overrides: { contentType: "image/jpeg" },
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["not_pdf"],
  },
  {
    name: "corrupt PDF (truncated, bytes flipped)",
    rail: "card",
    file: async () => corrupt(await receiptPdf(receiptSpec("sberbank", "card"))),
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["pdf_unreadable"],
  },
  {
    name: "huge PDF (6 MiB, over the 5 MiB read limit)",
    rail: "card",
    file: () => hugePdf(receiptSpec("sberbank", "card"), 6 * 1024 * 1024),
    verdict: "manual_check",
    reason: "not_terminal",
    checks: ["file_too_large"],
  },
];

describe("receipt checks", () => {
  let h: Harness;
  const rows: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(async () => {
    await h?.stop();
    if (rows.length === CASES.length) writeOrCompareTable(rows);
  });

  for (const c of CASES) {
    it(`${c.name}: ${c.verdict}${c.reason ? `/${c.reason}` : ""}${c.checks.length ? ` by ${c.checks.join(" + ")}` : ""}`, async () => {
      const file = await c.file();
      await c.before?.(h, file);
      const { review } = await h.client.submitReceipt(
        submission(c.rail, file, { operationId: randomUUID(), ...c.overrides }),
      );
      expect({
        verdict: review?.verdict,
        reason: review?.manualCheckReason,
        checks: review?.findings.map((f) => f.check).sort(),
      }).toEqual({ verdict: c.verdict, reason: c.reason, checks: [...c.checks].sort() });
      if (c.verdict === "completed") expect(review?.actualAmount).toBe("1500.00");
      rows.push(
        `| ${c.name} | ${review?.layout ?? "—"} | ${c.verdict}${c.reason ? ` / ${c.reason}` : ""} | ${c.checks.map((k) => `\`${k}\``).join(", ") || "none"} |`,
      );
    });
  }
});

const README = new URL("../README.md", import.meta.url);
const START = "<!-- checks-table:start -->";
const END = "<!-- checks-table:end -->";

function writeOrCompareTable(rows: string[]) {
  const table = ["| receipt | layout | verdict | checks that fired |", "|---|---|---|---|", ...rows].join(
    "\n",
  );
  const readme = readFileSync(README, "utf8");
  const before = readme.slice(0, readme.indexOf(START) + START.length);
  const after = readme.slice(readme.indexOf(END));
  const current = readme.slice(before.length, readme.length - after.length).trim();
  if (process.env.RECEIPTS_UPDATE_README === "1") writeFileSync(README, `${before}\n${table}\n${after}`);
  else expect(current, "README checks table is stale: run with RECEIPTS_UPDATE_README=1").toBe(table);
}
