// `pnpm --filter @gw/receipts corpus:build`: regenerates the receipts corpus with real PDF
// software (corpus/writers.ts, corpus/forge.ts) into corpus/files/ and its manifest. The
// split is by writer and was fixed before any check was tuned (see HELDOUT).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Bank, type Rail, type ReceiptSpec, receiptSpec, sheet } from "@gw/testkit/receipts";
import { CONTRADICTION_CASES, CONTRADICTION_WRITERS } from "./contradictions.ts";
import { type Change, drawRoundTrip, mupdfIncremental, pdflibOverlay, qdfEdit, spotsOf } from "./forge.ts";
import { type CorpusEntry, HELDOUT, loadManifest, MANIFEST, splitOf } from "./manifest.ts";
import { closeBrowser, RESAVERS, type ResaverName, WRITERS, type WriterName } from "./writers.ts";

const OUT = new URL("./files/", import.meta.url).pathname;
const BANKS: Bank[] = ["sberbank", "tbank", "vtb", "alfabank"];
const BASE = Date.UTC(2026, 2, 12, 8, 0);
const entries: CorpusEntry[] = [];
let serial = 0;

/** A receipt of the expected payment (1 500,00 to the expected card or phone), its identifiers fixed by `serial`. */
function spec(bank: Bank, rail: Rail, overrides: Partial<ReceiptSpec> = {}): ReceiptSpec {
  serial++;
  const at = new Date(BASE + serial * 7 * 60_000);
  return receiptSpec(bank, rail, {
    at,
    documentNumber: String(4_100_000_000_000 + serial * 7919),
    sbpId: `B${(serial * 104729).toString(16).toUpperCase().padStart(8, "0")}000${bank.slice(0, 2).toUpperCase()}Q0${String(serial).padStart(5, "0")}M3`,
    wording: serial % 3,
    ...overrides,
  });
}

/**
 * Whether a file's text layer still reads as the receipt (poppler's pdftotext, not the
 * review, is the judge): some re-saves keep the page's look but break its text mapping,
 * and such a file is unreadable for any checker, not a genuine receipt it could pass.
 */
export function textSurvives(bytes: Uint8Array): boolean {
  try {
    const text = execFileSync("pdftotext", ["-", "-"], { input: bytes }).toString("utf8");
    return /Сумма|Итого/.test(text) && /\d/.test(text);
  } catch {
    return false;
  }
}

function save(
  name: string,
  bytes: Uint8Array,
  e: Omit<CorpusEntry, "file" | "split" | "at"> & { at: Date },
): string {
  const file = `${name}.${e.expected === "unreadable" && e.technique === "not_pdf" ? "png" : "pdf"}`;
  writeFileSync(join(OUT, file), bytes);
  entries.push({ ...e, file, at: e.at.toISOString(), split: splitOf(e.writer, e.resaver) });
  return file;
}

/** The values two sheets print differently: what a forger retypes. */
function changes(from: ReceiptSpec, to: ReceiptSpec): Change[] {
  const rows = (s: ReceiptSpec) => {
    const sh = sheet(s);
    return [...sh.title, ...sh.rows].map((r) => (typeof r === "string" ? r : r[1]));
  };
  const a = rows(from);
  const b = rows(to);
  return a.flatMap((v, i) => (b[i] !== undefined && b[i] !== v ? [{ from: v, to: b[i] as string }] : []));
}

async function buildWriter(writer: WriterName, tmp: string) {
  const write = (s: ReceiptSpec) => WRITERS[writer](sheet(s), tmp);
  const id = (kind: string, i = 0) => `${writer}-${kind}${i ? `-${i}` : ""}`;
  const resavers = Object.keys(RESAVERS) as ResaverName[];
  const resave = (bytes: Uint8Array, r: ResaverName) => {
    writeFileSync(join(tmp, "in.pdf"), bytes);
    RESAVERS[r](join(tmp, "in.pdf"), join(tmp, "out.pdf"));
    return readFileSync(join(tmp, "out.pdf"));
  };
  // Genuine: every bank, both rails; then each re-saver over one of them.
  let k = 0;
  const genuine: { s: ReceiptSpec; bytes: Uint8Array }[] = [];
  for (const bank of BANKS)
    for (const rail of ["card", "phone"] as Rail[]) {
      const s = spec(bank, rail);
      const bytes = await write(s);
      genuine.push({ s, bytes });
      save(id(`genuine-${bank}-${rail}`), bytes, {
        writer,
        expected: "genuine",
        technique: "genuine",
        rail,
        at: s.at,
      });
    }
  for (const r of resavers) {
    const { s, bytes } = genuine[k++ * 3 + 1] as (typeof genuine)[number];
    const again = resave(bytes, r);
    const readable = textSurvives(again);
    save(id(`resaved-${r}`), again, {
      writer,
      resaver: r,
      expected: readable ? "genuine" : "unreadable",
      technique: readable ? "resaved" : "resaved_text_lost",
      rail: s.rail,
      at: s.at,
    });
  }
  // In progress and declined.
  for (const [i, bank] of [BANKS[serial % 4], BANKS[(serial + 1) % 4]].entries()) {
    const p = spec(bank as Bank, i ? "phone" : "card", { status: "in_progress" });
    save(id(`in-progress-${p.bank}`), await write(p), {
      writer,
      expected: "in_progress",
      technique: "in_progress",
      rail: p.rail,
      at: p.at,
    });
    const d = spec(bank as Bank, i ? "card" : "phone", { status: "failed" });
    save(id(`declined-${d.bank}`), await write(d), {
      writer,
      expected: "declined",
      technique: "declined",
      rail: d.rail,
      at: d.at,
    });
  }
  // Forgeries: a genuine receipt of another transfer, edited to show the expected one.
  const forge = async (
    technique: string,
    bank: Bank,
    rail: Rail,
    other: Partial<ReceiptSpec>,
    tool: string,
  ) => {
    const target = spec(bank, rail);
    const original = { ...target, ...other };
    const bytes = await write(original);
    const wanted = changes(original, target);
    const spots = (await spotsOf(bytes, wanted)).filter((s) => tool === "pdf-lib" || /[0-9]/.test(s.text));
    if (spots.length === 0 && tool !== "draw")
      return console.warn(`${writer} ${technique}: nothing to cover`);
    mkdirSync(join(tmp, "in"), { recursive: true });
    const src = join(tmp, "in", "orig.pdf");
    writeFileSync(src, bytes);
    let forged: Uint8Array | undefined;
    let resaver: ResaverName | undefined;
    if (tool === "pdf-lib") forged = await pdflibOverlay(bytes, spots);
    else if (tool === "mupdf-incremental" || tool === "laundered") {
      mupdfIncremental(src, join(tmp, "inc.pdf"), spots, tmp);
      forged = readFileSync(join(tmp, "inc.pdf"));
      if (tool === "laundered") {
        resaver = resavers[serial % resavers.length] as ResaverName;
        forged = resave(forged, resaver);
      }
    } else if (tool === "qdf" || tool === "qdf-compact") {
      qdfEdit(src, join(tmp, "qdf.pdf"), spots, tmp, tool === "qdf-compact");
      forged = readFileSync(join(tmp, "qdf.pdf"));
    } else forged = drawRoundTrip(src, wanted, tmp);
    if (!forged) return console.warn(`${writer} ${technique}: Draw left nothing to retype`);
    save(id(technique), forged, {
      writer,
      resaver,
      tool,
      expected: "forgery",
      technique,
      rail,
      at: target.at,
    });
  };
  const earlier = new Date(BASE - 3 * 86_400_000);
  await forge("edit-amount-pdflib", BANKS[0] as Bank, "card", { amount: "1000.00" }, "pdf-lib");
  await forge("edit-card-pdflib", BANKS[1] as Bank, "card", { recipientCard: "2202209876543210" }, "pdf-lib");
  await forge(
    "edit-date-pdflib",
    BANKS[2] as Bank,
    "phone",
    { at: earlier, createdAt: earlier, modifiedAt: earlier },
    "pdf-lib",
  );
  await forge(
    "edit-amount-mupdf-incremental",
    BANKS[3] as Bank,
    "phone",
    { amount: "1000.00" },
    "mupdf-incremental",
  );
  await forge("edit-amount-laundered", BANKS[serial % 4] as Bank, "card", { amount: "1000.00" }, "laundered");
  await forge("edit-amount-qdf", BANKS[(serial + 1) % 4] as Bank, "card", { amount: "1000.00" }, "qdf");
  await forge(
    "edit-amount-qdf-compact",
    BANKS[(serial + 2) % 4] as Bank,
    "phone",
    { amount: "1000.00" },
    "qdf-compact",
  );
  await forge("edit-amount-draw", BANKS[(serial + 3) % 4] as Bank, "card", { amount: "1000.00" }, "draw");
  // Made up or of another payment, written by the bank's own kind of writer.
  const made = async (technique: string, s: ReceiptSpec, windowAt = s.at) =>
    save(id(technique), await write(s), {
      writer,
      expected: "forgery",
      technique,
      rail: s.rail,
      at: windowAt,
    });
  await made("other-amount", spec("vtb", "card", { amount: "1000.00" }));
  await made("other-recipient", spec("alfabank", "phone", { recipientPhone: "+79005554433" }));
  const late = spec("sberbank", "card");
  await made("outside-window", { ...late, at: earlier, createdAt: earlier, modifiedAt: earlier }, late.at);
  await made("mixed-banks", spec("sberbank", "phone", { assembly: { footer: "vtb" } }));
  // Reuse: the same file, and the same transfer in a file another program wrote.
  const first = genuine[(serial % 4) * 2] as (typeof genuine)[number];
  save(id("reused-file"), first.bytes, {
    writer,
    expected: "forgery",
    technique: "reused_file",
    rail: first.s.rail,
    at: first.s.at,
    earlier: `${id(`genuine-${first.s.bank}-${first.s.rail}`)}.pdf`,
  });
  const other = (Object.keys(WRITERS) as WriterName[]).find((w) => w !== writer) as WriterName;
  const twin = genuine[(serial % 4) * 2 + 1] as (typeof genuine)[number];
  const twinFile = save(id("reused-transfer-earlier"), await WRITERS[other](sheet(twin.s), tmp), {
    writer,
    expected: "genuine",
    technique: "earlier_copy",
    rail: twin.s.rail,
    at: twin.s.at,
  });
  save(id("reused-transfer"), twin.bytes, {
    writer,
    expected: "forgery",
    technique: "reused_transfer",
    rail: twin.s.rail,
    at: twin.s.at,
    earlier: twinFile,
  });
  // The text contradicts itself, and genuine receipts with a fee, a total and later stamps.
  if (CONTRADICTION_WRITERS.includes(writer))
    for (const c of CONTRADICTION_CASES) {
      const s = spec(c.bank, c.rail);
      save(id(c.name), await WRITERS[writer](c.amend(sheet(s), s.at), tmp), {
        writer,
        expected: c.expected,
        technique: c.name.replace(/^genuine-/, "genuine_"),
        rail: s.rail,
        at: s.at,
      });
    }
  // Files nothing can be read from.
  const g = genuine[0] as (typeof genuine)[number];
  const cut = Buffer.from(g.bytes.subarray(0, Math.floor(g.bytes.length * 0.55)));
  for (let i = 400; i < cut.length; i += 97) cut[i] = (cut[i] ?? 0) ^ 0x5a;
  save(id("corrupt"), cut, {
    writer,
    expected: "unreadable",
    technique: "corrupt",
    rail: g.s.rail,
    at: g.s.at,
  });
  writeFileSync(join(tmp, "g.pdf"), g.bytes);
  execFileSync("mutool", ["draw", "-q", "-r", "40", "-o", join(tmp, "g.png"), join(tmp, "g.pdf"), "1"]);
  save(id("not-pdf"), readFileSync(join(tmp, "g.png")), {
    writer,
    expected: "unreadable",
    technique: "not_pdf",
    rail: g.s.rail,
    at: g.s.at,
  });
  execFileSync("gs", [
    "-q",
    "-dNOPAUSE",
    "-dBATCH",
    "-sDEVICE=pdfimage8",
    "-r50",
    `-sOutputFile=${tmp}/img.pdf`,
    join(tmp, "g.pdf"),
  ]);
  save(id("image-only"), readFileSync(join(tmp, "img.pdf")), {
    writer,
    expected: "unreadable",
    technique: "image_only",
    rail: g.s.rail,
    at: g.s.at,
  });
}

// `corpus:build <writer>` rebuilds one writer's files and keeps the others'.
const only = process.argv[2] as WriterName | undefined;
if (only) {
  for (const e of loadManifest()) {
    if (e.writer === only) rmSync(join(OUT, e.file), { force: true });
    else entries.push(e);
  }
  serial = 1000 * (Object.keys(WRITERS).indexOf(only) + 1);
} else rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
for (const writer of Object.keys(WRITERS) as WriterName[]) {
  if (only && writer !== only) continue;
  const tmp = mkdtempSync(join(tmpdir(), `corpus-${writer}-`));
  try {
    await buildWriter(writer, tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  process.stdout.write(`${writer}: ${entries.filter((e) => e.writer === writer).length} files\n`);
}
await closeBrowser();
writeFileSync(MANIFEST, `${JSON.stringify({ heldout: HELDOUT, entries }, null, 2)}\n`);
