// Cases of rule 4 (the text contradicts itself): receipts that print a fee, a total and
// further dates of the transfer. The genuine ones add up and their later stamps are
// later; the forgeries were made up with the bank's kind of writer (no edit in the file
// to find) from a template whose total or dates the forger did not redo.
import type { Row, Sheet } from "@gw/testkit/receipts";

const two = (n: number) => String(n).padStart(2, "0");
/** "12.03.2026 14:32" in Moscow time, as the banks print it. */
export const msk = (d: Date) => {
  const m = new Date(d.getTime() + 3 * 3_600_000);
  return `${two(m.getUTCDate())}.${two(m.getUTCMonth() + 1)}.${m.getUTCFullYear()} ${two(m.getUTCHours())}:${two(m.getUTCMinutes())}`;
};

/** A sheet with some rows' values replaced (title and body, by label) and rows added after the body. */
export function amended(sheet: Sheet, values: Record<string, string>, added: [string, string][] = []): Sheet {
  const swap = (r: Row): Row =>
    typeof r !== "string" && r[0] in values ? [r[0], values[r[0]] as string] : r;
  return {
    ...sheet,
    title: sheet.title.map(swap),
    rows: [...sheet.rows.map(swap), ...added],
  };
}

export type Kind = "genuine" | "forgery";

/** One case: which bank and rail, what it is, and how its sheet is amended. */
export interface ContradictionCase {
  name: string;
  bank: "sberbank" | "tbank" | "vtb" | "alfabank";
  rail: "card" | "phone";
  expected: Kind;
  amend: (sheet: Sheet, at: Date) => Sheet;
}

const DAY = 86_400_000;

export const CONTRADICTION_CASES: ContradictionCase[] = [
  {
    name: "genuine-fee-total",
    bank: "vtb",
    rail: "card",
    expected: "genuine",
    amend: (s) => amended(s, { Комиссия: "15,00 ₽" }, [["Итого к списанию", "1 515,00 ₽"]]),
  },
  {
    name: "genuine-fee-total-tbank",
    bank: "tbank",
    rail: "card",
    expected: "genuine",
    amend: (s) => amended(s, { Комиссия: "15 ₽", Итого: "1 515 ₽" }),
  },
  {
    name: "genuine-later-stamps",
    bank: "alfabank",
    rail: "phone",
    expected: "genuine",
    amend: (s, at) =>
      amended(s, {}, [
        ["Дата зачисления", msk(new Date(at.getTime() + 60_000))],
        ["Дата формирования", msk(new Date(at.getTime() + 2 * DAY))],
      ]),
  },
  {
    name: "total-off",
    bank: "vtb",
    rail: "phone",
    expected: "forgery",
    amend: (s) => amended(s, { Комиссия: "15,00 ₽" }, [["Итого к списанию", "1 015,00 ₽"]]),
  },
  {
    name: "total-off-tbank",
    bank: "tbank",
    rail: "card",
    expected: "forgery",
    amend: (s) => amended(s, { Комиссия: "15 ₽", Итого: "1 015 ₽" }),
  },
  {
    name: "credited-before-sent",
    bank: "alfabank",
    rail: "card",
    expected: "forgery",
    amend: (s, at) => amended(s, {}, [["Дата зачисления", msk(new Date(at.getTime() - 3 * DAY))]]),
  },
  {
    name: "operation-dates-apart",
    bank: "vtb",
    rail: "card",
    expected: "forgery",
    amend: (s, at) => amended(s, {}, [["Дата операции", msk(new Date(at.getTime() - 3 * DAY))]]),
  },
];

/** The writers these cases are built for (the fast ones: LibreOffice and Chromium rebuilds take long). */
export const CONTRADICTION_WRITERS = ["pdfkit", "pdf-lib", "jspdf", "weasyprint", "fpdf"];
