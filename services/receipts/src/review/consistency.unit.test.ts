// Rule 4: the text contradicts itself. Receipts as lines of cells (what ReceiptText
// rebuilds from a PDF), read by the layout modules, then checked.
import { describe, expect, it } from "vitest";
import { extract } from "../layouts/index.ts";
import { ReceiptText } from "../layouts/text.ts";
import { contradictions } from "./consistency.ts";

type Rows = [string, string][];

/** A VTB receipt of 1 500,00 ₽ with `rows` added (or replacing rows of the same label). */
function vtb(extra: Rows, brand = "ВТБ"): string[] {
  const base: Rows = [
    ["Дата и время", "12.03.2026 14:32"],
    ["Статус", "Исполнено"],
    ["Сумма операции", "1 500,00 ₽"],
    ["Комиссия", "0,00 ₽"],
    ["Получатель", "Иван Петрович С."],
    ["Карта получателя", "•••• 1234"],
    ["Номер операции", "4100000000001"],
  ];
  const labels = new Set(extra.map(([l]) => l));
  const rows = [...base.filter(([l]) => !labels.has(l)), ...extra];
  const text = new ReceiptText([[brand], ["Квитанция об операции"], ...rows.map((r) => [...r])]);
  return contradictions(extract(text))
    .filter((f) => f.check === "text_inconsistent")
    .map((f) => f.detail);
}

/** T-Bank prints the total ("Итого") in its title, the amount and fee below. */
function tbank(total: string, fee: string, amount = "1 500 ₽"): string[] {
  const text = new ReceiptText([
    ["Т-Банк"],
    ["12.03.2026 14:32:10"],
    ["Итого", total],
    ["Статус", "Успешно"],
    ["Сумма", amount],
    ["Комиссия", fee],
    ["Карта получателя", "220220******1234"],
    ["Получатель", "Иван С."],
    ["Квитанция №", "1-41-000-000-001"],
  ]);
  return contradictions(extract(text)).map((f) => f.detail);
}

describe("a total that does not add up", () => {
  it("fires when amount + fee is not the total", () => {
    expect(
      vtb([
        ["Комиссия", "15,00 ₽"],
        ["Итого к списанию", "1 015,00 ₽"],
      ]),
    ).toEqual([expect.stringContaining("total")]);
    expect(tbank("1 015 ₽", "15 ₽")).toEqual([expect.stringContaining("total")]);
    expect(
      vtb([
        ["Сумма с комиссией", "1 500,00 ₽"],
        ["Комиссия", "30,00 ₽"],
      ]),
    ).toHaveLength(1);
    expect(vtb([["Списано", "1 000,00 ₽"]])).toHaveLength(1);
  });

  it("is quiet when the total is the amount plus its fee, or the fee is 0 or absent", () => {
    expect(
      vtb([
        ["Комиссия", "15,00 ₽"],
        ["Итого к списанию", "1 515,00 ₽"],
      ]),
    ).toEqual([]);
    expect(tbank("1 515 ₽", "15 ₽")).toEqual([]);
    expect(tbank("1 500 ₽", "Без комиссии")).toEqual([]);
    expect(vtb([["Списано", "1 500,00 RUB"]])).toEqual([]);
    expect(vtb([["Итого", "1 500 ₽"]])).toEqual([]);
  });

  it("says nothing when it cannot be sure what the fee or total is", () => {
    // A fee as a rate, a total in another currency: no sum to check.
    expect(
      vtb([
        ["Комиссия", "1 %"],
        ["Итого", "1 515,00 ₽"],
      ]),
    ).toEqual([]);
    expect(vtb([["Итого", "16,50 USD"]])).toEqual([]);
  });
});

describe("dates that contradict each other", () => {
  it("fires when the money arrived before it was sent", () => {
    expect(vtb([["Дата зачисления", "09.03.2026 14:33"]])).toEqual([expect.stringContaining("before")]);
    expect(vtb([["Дата и время исполнения", "11.03.2026 10:00"]])).toHaveLength(1);
  });

  it("fires when two labelled operation dates disagree by more than a few minutes", () => {
    expect(vtb([["Дата операции", "09.03.2026 14:32"]])).toEqual([expect.stringContaining("disagree")]);
  });

  it("is quiet for a credit a minute later, a receipt generated days later, the same time twice", () => {
    expect(vtb([["Дата зачисления", "12.03.2026 14:33"]])).toEqual([]);
    expect(vtb([["Дата зачисления", "12.03.2026 14:31:50"]])).toEqual([]);
    expect(vtb([["Дата формирования", "15.03.2026 09:00"]])).toEqual([]);
    expect(vtb([["Дата и время формирования", "01.01.2026 09:00"]])).toEqual([]);
    expect(vtb([["Дата операции", "12.03.2026 14:32:40"]])).toEqual([]);
  });

  it("takes a status alone on its line for a status, not for the label of the next line's date", () => {
    const text = new ReceiptText([
      ["ВТБ"],
      ["Квитанция об операции"],
      ["Дата и время", "12.03.2026 14:32"],
      ["Исполнено"],
      ["09.03.2026 10:00"],
      ["Сумма операции", "1 500,00 ₽"],
    ]);
    expect(contradictions(extract(text))).toEqual([]);
  });

  it("takes a whole-hour difference for another time zone, not a contradiction", () => {
    // Moscow time in one place, the payer's (Yekaterinburg, +2 h) in another.
    expect(vtb([["Дата операции", "12.03.2026 16:32"]])).toEqual([]);
    expect(vtb([["Дата зачисления", "12.03.2026 12:33"]])).toEqual([]);
  });
});
