// Test support: a seeded, parameterised corpus of receipts for scoring the review. Each
// case is built from its seed and index alone, so any sample can be rebuilt without the
// rest. Two splits: `tuning` (seed 1) is what the checks may be developed against;
// `heldout` (seed 2) is only ever scored, never looked at case by case while tuning.
import { Decimal } from "@gw/money";
import {
  type Bank,
  buildReceipt,
  corrupt,
  imageOnlyPdf,
  notPdf,
  type Rail,
  type ReceiptSpec,
  receiptSpec,
} from "@gw/testkit/receipts";
import type { ReviewInput } from "../review/review.ts";
import {
  appendUpdate,
  BANK_WRITERS,
  EDITORS,
  HELDOUT_EDITORS,
  producerOf,
  RESAVERS,
  replacePageByUpdate,
  type UpdateStyle,
  type WriterProfile,
  writeAs,
} from "./writers.ts";

/** What a case is, and so what the review should answer. */
export type ExpectedClass = "genuine" | "forgery" | "in_progress" | "declined" | "unreadable";
/** `tuning` may be looked at case by case while developing checks; `heldout` is only ever scored. */
export type Split = "tuning" | "heldout";

/** One generated receipt with the payment it is submitted for. */
export interface CorpusCase {
  id: string;
  split: Split;
  expected: ExpectedClass;
  technique: string;
  bank: Bank;
  file: Uint8Array;
  input: ReviewInput;
  /** Files submitted before this one for other operations (reuse cases). */
  earlier: Uint8Array[];
}

/** The seed of each split: the same index in two splits is two unrelated cases. */
export const SPLIT_SEEDS: Record<Split, number> = { tuning: 1, heldout: 2 };

const MODULE_BANKS = ["sberbank", "tbank", "vtb", "alfabank"] as const;
const OTHER_BANKS = ["ozon", "raiffeisen", "gazprombank"] as const;

/** Recipient banks as receipts print them, by the requisites' bank code. */
const RECIPIENT_BANKS: Record<string, string[]> = {
  sberbank: ["Сбербанк", "СберБанк", "ПАО Сбербанк"],
  tinkoff: ["Т-Банк", "Тинькофф Банк", "АО «ТБанк»"],
  vtb: ["ВТБ", "Банк ВТБ (ПАО)"],
  alfabank: ["Альфа-Банк", "АО «Альфа-Банк»"],
  raiffeisen: ["Райффайзенбанк"],
  ozonbank: ["Озон Банк", "ОЗОН Банк"],
};

const NAMES: [string, string, string][] = [
  ["Иван", "Иванович", "Иванов"],
  ["Мария", "Сергеевна", "Кузнецова"],
  ["Алексей", "Петрович", "Смирнов"],
  ["Ольга", "Викторовна", "Попова"],
  ["Дмитрий", "Андреевич", "Волков"],
  ["Анна", "Олеговна", "Лебедева"],
];

const AMOUNTS = ["1500.00", "2350.00", "780.50", "12000.00", "499.99", "3000.00", "64250.00", "10.00"];

/** Weights of the classes and, within them, of the techniques. */
const TECHNIQUES: [ExpectedClass, string, number][] = [
  ["genuine", "plain", 14],
  ["genuine", "wording", 10],
  ["genuine", "share_sheet", 6],
  ["genuine", "desktop_save", 5],
  ["forgery", "incremental_edit", 7],
  ["forgery", "objstm_override", 6],
  ["forgery", "multi_xref", 5],
  ["forgery", "producer_swap", 7],
  ["forgery", "editor_rewrite", 6],
  ["forgery", "mixed_bank", 6],
  ["forgery", "reuse_relaid", 6],
  ["forgery", "reuse_same", 2],
  ["forgery", "content_mismatch", 3],
  ["in_progress", "in_progress", 6],
  ["declined", "declined", 4],
  ["unreadable", "image_only", 3],
  ["unreadable", "corrupt", 3],
  ["unreadable", "not_pdf", 2],
];

/** A small deterministic generator (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BASE = Date.UTC(2026, 2, 2, 6, 0, 0);

const caseRng = (split: Split, index: number) => rng(SPLIT_SEEDS[split] * 1_000_003 + index * 7919);

/** Which class and technique case `index` of `split` is, without building it. */
export function techniqueOf(split: Split, index: number): [ExpectedClass, string] {
  return chooseTechnique(caseRng(split, index)());
}

function chooseTechnique(draw: number): [ExpectedClass, string] {
  const total = TECHNIQUES.reduce((n, t) => n + t[2], 0);
  const roll = draw * total;
  let acc = 0;
  const [expected, technique] = TECHNIQUES.find((t) => {
    acc += t[2];
    return roll < acc;
  }) ?? ["genuine", "plain"];
  return [expected, technique];
}

/** Case `index` of `split`: the same arguments always build the same bytes. */
export async function corpusCase(split: Split, index: number): Promise<CorpusCase> {
  const r = caseRng(split, index);
  const [expected, technique] = chooseTechnique(r());
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join("");
  const hex = (n: number) =>
    Array.from({ length: n }, () => "0123456789ABCDEF"[Math.floor(r() * 16)]).join("");

  const bank: Bank = r() < 0.75 ? pick(MODULE_BANKS) : pick(OTHER_BANKS);
  const rail: Rail = r() < 0.5 ? "card" : "phone";
  const amount = pick(AMOUNTS);
  const [first, middle, last] = pick(NAMES);
  const card = `${pick(["2202", "4276", "5536", "2200"])}${digits(12)}`;
  const phone = `+79${digits(9)}`;
  const recipientCode = pick(Object.keys(RECIPIENT_BANKS));
  const windowStart = new Date(BASE + index * 37 * 60_000 + Math.floor(r() * 600) * 1000);
  const at = new Date(
    windowStart.getTime() + (1 + Math.floor(r() * 24)) * 60_000 + Math.floor(r() * 60) * 1000,
  );
  const submittedAt = new Date(at.getTime() + (1 + Math.floor(r() * 5)) * 60_000);
  const spec = receiptSpec(bank, rail, {
    amount,
    recipientName: `${first} ${middle} ${last[0]}.`,
    recipientCard: card,
    recipientPhone: phone,
    recipientBank: pick(RECIPIENT_BANKS[recipientCode] ?? ["Сбербанк"]),
    senderCard: `4276${digits(12)}`,
    at,
    documentNumber: `1${digits(12)}`,
    sbpId: `A${hex(31)}`,
    createdAt: new Date(at.getTime() + (5 + Math.floor(r() * 40)) * 1000),
  });
  const input: ReviewInput = {
    method: rail === "card" ? "WT_RUB_C2C" : "WT_RUB_PHONE",
    number: rail === "card" ? card : phone,
    name: `${first} ${middle} ${last}`,
    bankname: rail === "phone" ? recipientCode : undefined,
    amount: new Decimal(amount),
    createdAt: windowStart,
    expiresAt: new Date(windowStart.getTime() + 30 * 60_000),
    submittedAt,
  };

  const editors = split === "heldout" ? [...EDITORS, ...HELDOUT_EDITORS] : EDITORS;
  const bankWriter = (b: Bank = bank) => pick(BANK_WRITERS[b] as readonly WriterProfile[]);
  /** The bank's own engine writing `s`. */
  const genuine = async (s: ReceiptSpec, b: Bank = bank) => {
    const w = bankWriter(b);
    return writeAs((await buildReceipt(s)).doc, w, {
      producer: producerOf(w, pick(w.versions)),
      creator: w.creator,
      created: s.createdAt,
    });
  };
  /** What the transfer really was, before the forger changed it to match the payment. */
  const truth = (): ReceiptSpec => {
    const change = pick(["amount", "date", "recipient", "status"] as const);
    if (change === "amount") return { ...spec, amount: pick(AMOUNTS.filter((a) => a !== amount)) };
    if (change === "date") {
      const earlier = new Date(at.getTime() - (2 + Math.floor(r() * 20)) * 86_400_000);
      return { ...spec, at: earlier, createdAt: new Date(earlier.getTime() + 20_000) };
    }
    if (change === "recipient")
      return { ...spec, recipientCard: `2200${digits(12)}`, recipientPhone: `+79${digits(9)}` };
    return { ...spec, status: "failed" };
  };
  const updateStyle = (): UpdateStyle => ({
    hideEarlierEof: r() < 0.5,
    noFinalEof: r() < 0.2,
    trailingJunk: r() < 0.2,
  });

  let file: Uint8Array;
  const earlier: Uint8Array[] = [];
  switch (technique) {
    case "plain":
      file = await genuine(spec);
      break;
    case "wording":
      file = await genuine({ ...spec, wording: 1 + Math.floor(r() * 2) });
      break;
    case "share_sheet":
    case "desktop_save": {
      const w =
        technique === "desktop_save"
          ? (RESAVERS.find((x) => x.keepsCreationDate) ?? RESAVERS[0]!)
          : pick(RESAVERS.filter((x) => !x.keepsCreationDate));
      const saved = new Date(submittedAt.getTime() - Math.floor(r() * 50) * 1000);
      file = await writeAs((await buildReceipt({ ...spec, wording: Math.floor(r() * 3) })).doc, w, {
        producer: producerOf(w, pick(w.versions)),
        creator:
          w.creator?.replaceAll("{v}", "126") ?? (r() < 0.5 ? BANK_WRITERS[bank][0].creator : undefined),
        created: w.keepsCreationDate ? spec.createdAt : saved,
        modified: saved,
      });
      break;
    }
    case "incremental_edit":
    case "objstm_override": {
      const original = await genuine(truth());
      const style = { ...updateStyle(), objectStream: technique === "objstm_override" };
      const editor = r() < 0.5 ? producerOf(pick(editors), "1.0") : undefined;
      file = await replacePageByUpdate(original, (await buildReceipt(spec)).doc, style, editor);
      break;
    }
    case "multi_xref": {
      const original = await genuine(truth());
      const once = await replacePageByUpdate(original, (await buildReceipt(spec)).doc, {
        objectStream: r() < 0.5,
        hideEarlierEof: true,
      });
      // A second save that only touches the metadata, as editors do on "save" after "edit".
      file = await appendUpdate(once, async (doc) => doc.setModificationDate(spec.createdAt), {
        hideEarlierEof: true,
        noFinalEof: r() < 0.3,
      });
      break;
    }
    case "producer_swap": {
      const w = pick(editors);
      const target = r();
      const claimed =
        target < 0.6
          ? bankWriter()
          : target < 0.8
            ? bankWriter(pick(MODULE_BANKS.filter((b) => b !== bank)))
            : pick(RESAVERS);
      file = await writeAs((await buildReceipt(spec)).doc, w, {
        producer: producerOf(claimed, pick(claimed.versions)),
        creator: claimed.creator,
        created: spec.createdAt,
      });
      break;
    }
    case "editor_rewrite": {
      const w = pick(editors);
      file = await writeAs((await buildReceipt(spec)).doc, w, {
        producer: producerOf(w, pick(w.versions)),
        created: spec.createdAt,
        modified: r() < 0.5 ? spec.createdAt : submittedAt,
      });
      break;
    }
    case "mixed_bank": {
      const other = pick([...MODULE_BANKS, ...OTHER_BANKS].filter((b) => b !== bank));
      const part = r() < 0.5 ? "title" : "footer";
      file = await genuine({ ...spec, assembly: { [part]: other } }, part === "title" ? other : bank);
      break;
    }
    case "reuse_relaid": {
      earlier.push(await genuine(spec));
      file = await genuine({
        ...spec,
        relaid: r() < 0.3 ? "wrapped" : true,
        wording: Math.floor(r() * 3),
        createdAt: new Date(spec.createdAt.getTime() + 3_600_000),
      });
      break;
    }
    case "reuse_same":
      file = await genuine(spec);
      earlier.push(file);
      break;
    case "content_mismatch":
      file = await genuine(truth());
      break;
    case "in_progress":
      file = await genuine({ ...spec, status: "in_progress" });
      break;
    case "declined":
      file = await genuine({ ...spec, status: "failed" });
      break;
    case "image_only":
      file = await imageOnlyPdf();
      break;
    case "corrupt":
      file = corrupt(await genuine(spec));
      break;
    default:
      file = notPdf();
  }
  return {
    id: `${split}-${index}-${technique}-${bank}`,
    split,
    expected,
    technique,
    bank,
    file,
    input,
    earlier,
  };
}
