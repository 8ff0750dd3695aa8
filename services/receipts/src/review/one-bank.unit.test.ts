import { describe, expect, it } from "vitest";
import { ReceiptText } from "../layouts/text.ts";
import { issuerOf } from "./one-bank.ts";

const sber = (footer: string[], rows: string[][] = []) =>
  new ReceiptText([
    ["СберБанк"],
    ["Чек по операции"],
    ["12 марта 2026 14:32:10 (МСК)"],
    ["Операция", "Перевод по СБП"],
    ...rows,
    ["Статус", "Выполнено"],
    ...footer.map((l) => [l]),
  ]);

describe("one receipt, one bank", () => {
  it("reads the issuer from the title, the footer and the layout when they agree", () => {
    const text = sber(["ПАО Сбербанк. Генеральная лицензия Банка России № 1481", "По вопросам: 900"]);
    expect(issuerOf(text, "sberbank")).toEqual({ issuer: expect.objectContaining({ id: "sberbank" }) });
  });

  it("does not take a recipient's bank for the issuer", () => {
    const text = sber(
      ["ПАО Сбербанк. Генеральная лицензия Банка России № 1481"],
      [["Банк получателя", "АО «ТБанк»"], ["Банк получателя: Банк ВТБ (ПАО)"]],
    );
    expect(issuerOf(text, "sberbank").conflict).toBeUndefined();
  });

  it("names both banks when the footer is another bank's", () => {
    const { conflict } = issuerOf(
      sber(["Банк ВТБ (ПАО). Генеральная лицензия Банка России № 1000"]),
      "sberbank",
    );
    expect(conflict).toContain("СберБанк");
    expect(conflict).toContain("ВТБ (footer (licence № 1000), footer)");
  });

  it("knows a bank by its old and new names", () => {
    const text = new ReceiptText([
      ["Тинькофф"],
      ["12.03.2026 14:32:10"],
      ["Сумма", "1 500 ₽"],
      ["АО «ТБанк», лицензия Банка России № 2673"],
    ]);
    expect(issuerOf(text, "tbank")).toEqual({ issuer: expect.objectContaining({ id: "tbank" }) });
  });
});
