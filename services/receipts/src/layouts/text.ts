import { Decimal } from "@gw/money";
import type { TextItem } from "../pdf/parse.ts";

/** A receipt's text as lines of cells, rebuilt from the positions of the text items. */
export class ReceiptText {
  /** Lines top to bottom, each a list of cells left to right. */
  readonly lines: string[][];

  constructor(lines: string[][]) {
    this.lines = joinWrappedLabels(
      lines.map((cells) => cells.map(normalise).filter((c) => c !== "")).filter((l) => l.length > 0),
    );
  }

  /**
   * Rebuilds lines from pdf.js items: items whose baselines lie within 2 points are one
   * line, ordered by x; pages follow each other. Writers cut text into runs as they
   * please (a line, a word, a glyph): runs closer than a word gap are one cell.
   */
  static fromPages(pages: readonly (readonly TextItem[])[]): ReceiptText {
    const lines: string[][] = [];
    for (const items of pages) {
      const sorted = [...items].sort((a, b) => b.y - a.y || a.x - b.x);
      let current: TextItem[] = [];
      for (const item of sorted) {
        const first = current[0];
        if (first && Math.abs(first.y - item.y) > 2) {
          lines.push(cells(current));
          current = [];
        }
        current.push(item);
      }
      if (current.length > 0) lines.push(cells(current));
    }
    return new ReceiptText(lines);
  }

  /** All the text, one line per row, cells joined by a space. */
  get full(): string {
    return this.lines.map((l) => l.join(" ")).join("\n");
  }

  /** Characters of visible text: an image-only file has (almost) none. */
  get size(): number {
    return this.lines.reduce((n, l) => n + l.join("").length, 0);
  }

  /**
   * The share of characters no text has: control characters, U+FFFD and private-use
   * code points. A file whose fonts map glyphs to those (a broken or missing ToUnicode
   * map) looks right on screen but its text cannot be read.
   */
  get garbled(): number {
    const all = this.lines.map((l) => l.join("")).join("");
    let bad = 0;
    for (const c of all) {
      const code = c.charCodeAt(0);
      if (code < 0x20 || code === 0xfffd || (code >= 0xe000 && code <= 0xf8ff)) bad++;
    }
    return all.length === 0 ? 0 : bad / all.length;
  }

  /** True when one of the first `n` lines matches. */
  headerHas(re: RegExp, n = 4): boolean {
    return this.lines.slice(0, n).some((l) => re.test(l.join(" ")));
  }

  has(re: RegExp): boolean {
    return this.lines.some((l) => re.test(l.join(" ")));
  }

  /**
   * Every value of a labelled field. A label is a line's first cell matching `label`
   * whole (its value the remaining cells), or "label: value" in one cell; a label alone
   * on its line takes the next line as its value (unless `besideOnly`).
   */
  values(label: RegExp, { besideOnly = false } = {}): string[] {
    const whole = new RegExp(`^(?:${label.source})\\s*:?$`, "i");
    const prefixed = new RegExp(`^(?:${label.source})\\s*:\\s*(?<value>.+)$`, "i");
    // A label and its value a space apart in one run: the value starts as values do.
    const spaced = new RegExp(`^(?:${label.source})\\s+(?<value>[\\d+*•].*)$`, "i");
    const out: string[] = [];
    this.lines.forEach((cells, i) => {
      const [first, ...rest] = cells;
      if (first === undefined) return;
      if (whole.test(first)) {
        if (rest.length > 0) out.push(rest.join(" "));
        else if (!besideOnly) {
          const next = this.lines[i + 1];
          if (next) out.push(next.join(" "));
        }
        return;
      }
      const joined = cells.join(" ");
      const value = (prefixed.exec(joined) ?? spaced.exec(joined))?.groups?.value;
      if (value) out.push(value);
    });
    return out;
  }

  value(label: RegExp): string | undefined {
    return this.values(label)[0];
  }

  /**
   * A labelled identifier with its continuation: a long id broken over two lines goes on
   * in a line of its own that holds only letters and digits (no label, no Cyrillic).
   */
  identifierValue(label: RegExp): string | undefined {
    const whole = new RegExp(`^(?:${label.source})\\s*:?$`, "i");
    const prefixed = new RegExp(`^(?:${label.source})\\s*:\\s*(?<value>.+)$`, "i");
    for (const [i, cells] of this.lines.entries()) {
      const value =
        whole.test(cells[0] ?? "") && cells.length > 1
          ? cells.slice(1).join(" ")
          : prefixed.exec(cells.join(" "))?.groups?.value;
      if (value === undefined) continue;
      const next = this.lines[i + 1];
      if (next?.length === 1 && /^[0-9A-Za-z][0-9A-Za-z -]*$/.test(next[0] ?? ""))
        return `${value}${next[0]}`;
      return value;
    }
    return this.value(label);
  }
}

/** A label's continuation on a line of its own: lower-case words ("получателя", "операции"). */
const CONTINUATION = /^[а-яё][а-яё ]*$/;
const LABEL_HEAD = /^[А-ЯЁа-яё][А-ЯЁа-яё ]*$/;

/**
 * A label too long for its column wraps: "Номер телефона" / "получателя" with the value
 * beside its first line, or centred between the two (a line of its own). Both become one
 * line, label then value, as an unwrapped receipt prints it.
 */
function joinWrappedLabels(lines: string[][]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < lines.length; i++) {
    const [a = [], v = [], b = []] = [lines[i], lines[i + 1], lines[i + 2]] as (string[] | undefined)[];
    const head = a[0] ?? "";
    if (
      a.length === 1 &&
      v.length === 1 &&
      b.length === 1 &&
      LABEL_HEAD.test(head) &&
      CONTINUATION.test(b[0] ?? "")
    ) {
      out.push([`${head} ${b[0]}`, v[0] ?? ""]);
      i += 2;
    } else if (a.length > 1 && v.length === 1 && LABEL_HEAD.test(head) && CONTINUATION.test(v[0] ?? "")) {
      out.push([`${head} ${v[0]}`, ...a.slice(1)]);
      i += 1;
    } else out.push(a);
  }
  return out;
}

/** Runs further apart than a word gap (points) are separate cells: a label and its value. */
const CELL_GAP = 6;
/** Runs closer than this are one word cut into pieces. */
const WORD_GAP = 0.8;

/** One line's runs as cells: runs closer than a word gap joined, with a space between words. */
function cells(line: TextItem[]): string[] {
  const out: string[] = [];
  let end = Number.NEGATIVE_INFINITY;
  for (const item of line.sort((a, b) => a.x - b.x)) {
    const gap = item.x - end;
    const last = out.length - 1;
    if (last >= 0 && gap < CELL_GAP && gap > -CELL_GAP)
      out[last] += gap > WORD_GAP ? ` ${item.str}` : item.str;
    else out.push(item.str);
    end = item.w ? item.x + item.w : Number.NEGATIVE_INFINITY;
  }
  return out;
}

/**
 * What an honest bank may print differently without meaning anything else: NBSP, narrow
 * NBSP and runs of spaces become one space, the hyphens and minus signs one hyphen, and
 * zero-width characters go.
 */
export function normalise(s: string): string {
  return s
    .replace(/[\u200b-\u200d\ufeff\u00ad]/g, "")
    .replace(/[\u2010-\u2013\u2212]/g, "-")
    .replace(/[\u00a0\u202f\u2007\s]+/g, " ")
    .trim();
}

const AMOUNT =
  /(?<!\d)(\d{1,3}(?:[ \u00a0\u202f]\d{3})+|\d+)(?:[.,](\d{1,2}))?(?!\d)\s*(₽|руб\.?|RUB|RUR|р\.)?/gi;

/**
 * Every amount in roubles a value shows ("1 500,00 ₽", "1500.00 RUB", "1 500 ₽"); one
 * value normally shows one, an amount typed over another shows two. "Без комиссии" is
 * zero.
 */
export function parseAmounts(text: string | undefined): Decimal[] {
  if (text === undefined) return [];
  if (/без комиссии|бесплатно/i.test(text)) return [new Decimal(0)];
  return [...text.matchAll(AMOUNT)].flatMap((m) => {
    if (!m[1]) return [];
    const whole = m[1].replace(/[ \u00a0\u202f]/g, "");
    return [new Decimal(`${whole}.${(m[2] ?? "").padEnd(2, "0")}`)];
  });
}

/** The first amount a value shows. */
export const parseAmount = (text: string | undefined): Decimal | undefined => parseAmounts(text)[0];

const MONTHS = [
  "январ",
  "феврал",
  "март",
  "апрел",
  "ма[йя]",
  "июн",
  "июл",
  "август",
  "сентябр",
  "октябр",
  "ноябр",
  "декабр",
];

/**
 * Reads a date and time as banks print them ("12.03.2025 14:32:10", "12.03.25, 14:32",
 * "2025-03-12 14:32", "12 марта 2025 г. в 14:32 (МСК)"). Russian banks print Moscow time
 * (UTC+3) unless they name UTC.
 */
export function parseDateTime(text: string | undefined): Date | undefined {
  if (!text) return undefined;
  let y: number;
  let mo: number;
  let d: number;
  let rest: string;
  const numeric = /(\d{1,2})[./](\d{2})[./](\d{4}|\d{2})(?!\d)(.*)$/.exec(text);
  const iso = /(\d{4})-(\d{2})-(\d{2})(.*)$/.exec(text);
  if (iso) {
    y = Number(iso[1]);
    mo = Number(iso[2]);
    d = Number(iso[3]);
    rest = iso[4] ?? "";
  } else if (numeric) {
    d = Number(numeric[1]);
    mo = Number(numeric[2]);
    y = Number(numeric[3]);
    if (y < 100) y += 2000;
    rest = numeric[4] ?? "";
  } else {
    const named = /(\d{1,2})\s+([а-яё]+)\s+(\d{4})(.*)$/i.exec(text);
    if (!named) return undefined;
    const index = MONTHS.findIndex((m) => new RegExp(`^${m}`, "i").test(named[2] ?? ""));
    if (index < 0) return undefined;
    d = Number(named[1]);
    mo = index + 1;
    y = Number(named[3]);
    rest = named[4] ?? "";
  }
  const t = /(\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(rest);
  if (!t) return undefined;
  const offsetHours = /\bUTC\b|GMT/i.test(rest) ? 0 : 3;
  const ms = Date.UTC(y, mo - 1, d, Number(t[1]) - offsetHours, Number(t[2]), Number(t[3] ?? 0));
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) || mo < 1 || mo > 12 || d < 1 || d > 31 ? undefined : date;
}

/** The transfer status a text names. Failure words are looked for first: "не выполнен" contains "выполнен". */
export function classifyStatus(text: string | undefined): "success" | "in_progress" | "failed" | undefined {
  if (!text) return undefined;
  if (/отклон|отказ|отмен|ошибк|не выполнен|не исполнен|неуспеш/i.test(text)) return "failed";
  if (/в обработке|обрабатыва|в процессе|исполняется|ожида|принят|в пути|выполняется/i.test(text))
    return "in_progress";
  if (/успешн|выполнен|исполнен|зачислен|отправлен|проведен|доставлен|готово|завершен/i.test(text))
    return "success";
  return undefined;
}

/**
 * A card number as the receipt shows it, reduced to digits and unknowns: "•••• 1234" →
 * "?1234" style tail, "220220******1234" → head and tail. Returns the visible head and
 * tail digits.
 */
export function parseMaskedCard(text: string | undefined): { head: string; tail: string } | undefined {
  if (!text) return undefined;
  const compact = text.replace(/[\s-]/g, "");
  const m = /^(\d{0,8})[*•·xXХ.]{2,}(\d{4})$/.exec(compact) ?? /^(\d{0,8})\*?(\d{4})$/.exec(compact);
  if (m) return { head: m[1] ?? "", tail: m[2] ?? "" };
  const full = /^(\d{16,19})$/.exec(compact);
  if (full?.[1]) return { head: full[1].slice(0, 6), tail: full[1].slice(-4) };
  return undefined;
}

/** A phone number as 11 characters "7XXXXXXXXXX", masked digits as "?". */
export function parsePhone(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const chars = text.replace(/[^\d*•]/g, "").replace(/[*•]/g, "?");
  if (chars.length === 11 && /^[78]/.test(chars)) return `7${chars.slice(1)}`;
  if (chars.length === 10) return `7${chars}`;
  return undefined;
}
