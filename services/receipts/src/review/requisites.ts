import type { Extraction } from "../layouts/index.ts";
import { normalise } from "../layouts/text.ts";

/**
 * How receipts name the banks of the RUB dictionary (codes as operations publishes them):
 * each pattern matches the bank's names on receipts, old and new.
 */
const BANK_NAMES: Readonly<Record<string, RegExp>> = {
  sberbank: /сбер/i,
  tinkoff: /т-?банк|тинькофф|tbank|tinkoff/i,
  vtb: /втб|vtb/i,
  alfabank: /альфа|alfa/i,
  raiffeisen: /райф|raif/i,
  gazprombank: /газпромбанк/i,
  otkritie: /открытие/i,
  sovcombank: /совкомбанк/i,
  rosbank: /росбанк/i,
  psb: /псб|промсвязьбанк/i,
  mkb: /московский кредитный|мкб/i,
  pochtabank: /почта банк/i,
  rshb: /россельхозбанк|рсхб/i,
  uralsib: /уралсиб/i,
  ozonbank: /озон|ozon/i,
  yoomoney: /юmoney|юмани|yoomoney/i,
  mtsbank: /мтс/i,
  homecredit: /хоум|home credit/i,
  akbars: /ак барс/i,
  russtandard: /русский стандарт/i,
};

/** What the payer was shown and asked to pay. */
export interface ExpectedPayment {
  method: "WT_RUB_C2C" | "WT_RUB_PHONE";
  number: string;
  name?: string | undefined;
  bankname?: string | undefined;
  banknameDetails?: string | undefined;
}

/**
 * Why the receipt's recipient is not the expected one, or undefined when everything the
 * receipt shows agrees. `missing` when the receipt shows no card or phone at all.
 */
export function recipientMismatch(x: Extraction, expected: ExpectedPayment): string | "missing" | undefined {
  const digits = expected.number.replace(/\D/g, "");
  if (expected.method === "WT_RUB_C2C") {
    if (!x.recipientCard && x.recipientPhone) return "a transfer to a phone (SBP), expected a card transfer";
    if (!x.recipientCard) return "missing";
    const { head, tail } = x.recipientCard;
    if (!digits.endsWith(tail)) return `card ends in ${tail}, expected ${digits.slice(-4)}`;
    if (head && !digits.startsWith(head))
      return `card starts with ${head}, expected ${digits.slice(0, head.length)}`;
  } else {
    if (!x.recipientPhone && x.recipientCard)
      return "a transfer to a card, expected a transfer to a phone (SBP)";
    if (!x.recipientPhone) return "missing";
    const want = digits.length === 11 ? `7${digits.slice(1)}` : `7${digits.slice(-10)}`;
    for (let i = 0; i < 11; i++) {
      const c = x.recipientPhone[i];
      if (c !== "?" && c !== want[i]) return `phone ${x.recipientPhone} does not match the requisites`;
    }
    const bank = bankMismatch(x.recipientBank, expected);
    if (bank) return bank;
  }
  if (expected.name && x.recipientName && !namesAgree(x.recipientName, expected.name))
    return `recipient "${x.recipientName}" does not match the requisites' holder`;
  return undefined;
}

function bankMismatch(shown: string | undefined, expected: ExpectedPayment): string | undefined {
  if (!shown || !expected.bankname) return undefined;
  const pattern = BANK_NAMES[expected.bankname];
  if (pattern)
    return pattern.test(shown) ? undefined : `recipient bank "${shown}", expected ${expected.bankname}`;
  // An unknown code: compare with its display name, loosely.
  if (expected.banknameDetails && !fold(shown).includes(fold(expected.banknameDetails)))
    return `recipient bank "${shown}", expected ${expected.banknameDetails}`;
  return undefined;
}

const fold = (s: string) => normalise(s).toLowerCase().replace(/ё/g, "е").replace(/[«»"]/g, "");

/**
 * Banks print the recipient as "Иван Иванович И.", "Иван И.", "И***н Иванов" or in Latin
 * letters ("IVAN IVANOV"): every word shown must be a word of the holder's name (in either
 * alphabet), the initial of one, or one with letters masked, each used once.
 */
export function namesAgree(shown: string, expected: string): boolean {
  const want = fold(expected)
    .split(/[\s.]+/)
    .filter(Boolean)
    .map(sound);
  const words = fold(shown)
    .split(/\s+/)
    .map((w) => w.replace(/\.$/, ""))
    .filter(Boolean);
  if (words.length === 0) return true;
  const used = new Set<number>();
  return words.every((w) => {
    const i = want.findIndex((e, k) => !used.has(k) && wordAgrees(w, e));
    if (i < 0) return false;
    used.add(i);
    return true;
  });
}

function wordAgrees(word: string, want: string): boolean {
  const shown = sound(word);
  if (shown === want || (word.length === 1 && want.startsWith(shown))) return true;
  // Masked letters ("и***н", "ив*н"): the visible ones in place.
  const [head = "", ...rest] = shown.split(/[*•]+/);
  if (rest.length === 0) return false;
  const tail = rest.at(-1) ?? "";
  return want.length >= head.length + tail.length && want.startsWith(head) && want.endsWith(tail);
}

const LATIN: Record<string, string> = {
  а: "a",
  б: "b",
  в: "v",
  г: "g",
  д: "d",
  е: "e",
  ж: "zh",
  з: "z",
  и: "i",
  й: "y",
  к: "k",
  л: "l",
  м: "m",
  н: "n",
  о: "o",
  п: "p",
  р: "r",
  с: "s",
  т: "t",
  у: "u",
  ф: "f",
  х: "h",
  ц: "c",
  ч: "ch",
  ш: "sh",
  щ: "sh",
  ъ: "",
  ы: "i",
  ь: "",
  э: "e",
  ю: "yu",
  я: "ya",
};

/** A name word as it sounds, so its Cyrillic and its transliterations ("Юлия", "Yuliya", "Iuliia") agree. */
function sound(word: string): string {
  return [...word]
    .map((c) => LATIN[c] ?? c)
    .join("")
    .replace(/shch|sch/g, "sh")
    .replace(/kh|x/g, "h")
    .replace(/t[sc]/g, "c")
    .replace(/ii+/g, "i")
    .replace(/iy([aeou])/g, "i$1")
    .replace(/[iyj]u/g, "u")
    .replace(/[iyj]a/g, "a")
    .replace(/[iyj]o/g, "o")
    .replace(/[yj]e/g, "e")
    .replace(/[yj]/g, "i")
    .replace(/w/g, "v");
}
