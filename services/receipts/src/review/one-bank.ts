import { ISSUERS, type IssuerBank, issuerById } from "../layouts/banks.ts";
import type { ReceiptText } from "../layouts/text.ts";

/** Lines about the other side of the transfer: they may name any bank. */
const COUNTERPARTY = /банк|получател|отправител|плательщик|списан|зачислен/i;
const LICENCE = /лицензи[яи][^№]*№\s*(\d+)/i;

/** Where a bank was named on a receipt, for the operator. */
interface Mention {
  bank: IssuerBank;
  where: string;
}

/**
 * The bank that issued a receipt, and whether everything on it belongs to that bank: the
 * brand in the title, the legal name and licence number in the footer, and the layout
 * module that read it. A receipt whose parts name two issuers was assembled from two
 * receipts; a recipient's or sender's bank printed as a value is not the issuer.
 */
export function issuerOf(
  text: ReceiptText,
  layout: string,
): { issuer?: IssuerBank | undefined; conflict?: string | undefined } {
  const mentions: Mention[] = [];
  text.lines.forEach((cells, i) => {
    const [first = "", ...rest] = cells;
    // A labelled value about a counterparty ("Банк получателя", "Отправитель: …").
    const labelled = rest.length > 0 || /:/.test(first);
    if (labelled && COUNTERPARTY.test(first.split(":")[0] ?? "")) return;
    const line = cells.join(" ");
    const title = i < 2;
    const footer = i >= text.lines.length - 3;
    const where = title ? "title" : footer ? "footer" : `line ${i + 1}`;
    const licence = LICENCE.exec(line)?.[1];
    if (licence) {
      const bank = ISSUERS.find((b) => b.licence === licence);
      if (bank) mentions.push({ bank, where: `${where} (licence № ${licence})` });
    }
    // Only the brand atop the receipt and the legal lines at its foot name the issuer; a
    // bank named inside the rows is a value (a transfer "to a СберБанк client").
    if (title || footer)
      for (const bank of ISSUERS) if (bank.brand.test(line)) mentions.push({ bank, where });
  });
  const module = issuerById(layout);
  if (module) mentions.push({ bank: module, where: `the ${module.name} layout` });
  const banks = [...new Set(mentions.map((m) => m.bank))];
  if (banks.length <= 1) return { issuer: banks[0] };
  const named = banks.map((b) => {
    const at = [...new Set(mentions.filter((m) => m.bank === b).map((m) => m.where))];
    return `${b.name} (${at.join(", ")})`;
  });
  return { issuer: module ?? banks[0], conflict: named.join(" and ") };
}
