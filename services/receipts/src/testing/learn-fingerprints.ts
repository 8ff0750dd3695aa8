// `pnpm --filter @gw/receipts learn`: learns the writer fingerprints the review checks
// (src/layouts/fingerprints.json) from genuine fixtures: for each bank with a layout
// module, receipts as its engines write them (two versions each, card and SBP); the
// engines of banks read by the fallback layout (bound to the program, not to a bank);
// and a receipt re-saved by each honest re-saver. Only the first two versions of each engine
// are shown, so a version the review has never seen must pass by its family.
import { writeFileSync } from "node:fs";
import { LAYOUTS } from "../layouts/index.ts";
import { readRevisions, signatureKey } from "../pdf/revisions.ts";
import { type Fingerprints, familyOf, type WriterFingerprint } from "../review/writer.ts";
import { type Bank, buildReceipt, receiptSpec } from "./receipt-factory.ts";
import { BANK_WRITERS, producerOf, RESAVERS, type WriterProfile, writeAs } from "./writers.ts";

const AT = new Date(Date.UTC(2026, 0, 15, 9, 30));

async function fixture(bank: Bank, rail: "card" | "phone", w: WriterProfile, version: string) {
  const spec = receiptSpec(bank, rail, { at: AT, createdAt: AT, documentNumber: "1000000000001" });
  const producer = producerOf(w, version);
  const bytes = await writeAs((await buildReceipt(spec)).doc, w, {
    producer,
    creator: w.creator,
    created: AT,
  });
  return { family: familyOf(producer), signature: signatureKey(readRevisions(bytes).signature) };
}

function add(into: WriterFingerprint[], seen: { family: string; signature: string }) {
  const known = into.find((f) => f.family === seen.family);
  if (!known) into.push({ family: seen.family, signatures: [seen.signature] });
  else if (!known.signatures.includes(seen.signature)) known.signatures.push(seen.signature);
}

/** Learns every fingerprint from the fixtures. */
export async function learnFingerprints(): Promise<Fingerprints> {
  const banks: Record<string, WriterFingerprint[]> = {};
  for (const layout of LAYOUTS) {
    const bank = layout.id as keyof typeof BANK_WRITERS;
    const learned: WriterFingerprint[] = [];
    for (const w of BANK_WRITERS[bank] as readonly WriterProfile[])
      for (const version of w.versions.slice(0, 2))
        for (const rail of ["card", "phone"] as const) add(learned, await fixture(bank, rail, w, version));
    banks[bank] = learned;
  }
  // The engines of banks the fallback layout reads: bound to their program, not to a bank.
  const engines: WriterFingerprint[] = [];
  for (const bank of ["ozon", "raiffeisen", "gazprombank"] as const)
    for (const w of BANK_WRITERS[bank] as readonly WriterProfile[])
      for (const version of w.versions.slice(0, 2)) add(engines, await fixture(bank, "card", w, version));
  const resavers: WriterFingerprint[] = [];
  for (const w of RESAVERS) add(resavers, await fixture("sberbank", "card", w, w.versions[0] ?? ""));
  return { banks, engines, resavers };
}

/** Where the review reads them from. */
export const FINGERPRINTS_FILE = new URL("../layouts/fingerprints.json", import.meta.url);

if (import.meta.filename === process.argv[1])
  writeFileSync(FINGERPRINTS_FILE, `${JSON.stringify(await learnFingerprints(), null, 2)}\n`);
