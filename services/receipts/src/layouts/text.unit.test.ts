import { describe, expect, it } from "vitest";
import { classifyStatus, normalise, parseAmounts, parseDateTime, ReceiptText } from "./text.ts";
import { identifier } from "./types.ts";

describe("receipt text read by meaning", () => {
  it.each([
    ["12.03.2026 14:32:10", "2026-03-12T11:32:10.000Z"],
    ["12.03.26, 14:32", "2026-03-12T11:32:00.000Z"],
    ["2026-03-12 14:32", "2026-03-12T11:32:00.000Z"],
    ["12 марта 2026 г. в 14:32 (МСК)", "2026-03-12T11:32:00.000Z"],
    ["12/03/2026 14:32 UTC", "2026-03-12T14:32:00.000Z"],
  ])("reads the date %s as Moscow time unless UTC is named", (text, iso) => {
    expect(parseDateTime(text)?.toISOString()).toBe(iso);
  });

  it("reads one amount in roubles however it is printed", () => {
    for (const text of ["1 500,00 ₽", "1\u00a0500 руб.", "1500.00 RUB", "1 500,00 RUR"])
      expect(parseAmounts(text).map((a) => a.toFixed(2))).toEqual(["1500.00"]);
  });

  it("treats hyphens, spaces of every width and zero-width characters as layout", () => {
    expect(normalise("Т\u2011Банк\u200b  \u202f")).toBe("Т-Банк");
  });

  it("compares identifiers by their letters and digits only", () => {
    expect(identifier("a407 1135-9236 9001")).toBe(identifier("A40711359236\u00a09001"));
  });

  it("reads an identifier broken over two lines with its continuation", () => {
    const text = new ReceiptText([
      ["Идентификатор операции СБП", "a4071135923690010000"],
      ["040011640501"],
      ["Номер операции", "123"],
    ]);
    expect(text.identifierValue(/Идентификатор операции СБП/)).toBe("a4071135923690010000040011640501");
  });

  it("reads a receipt whose writer cuts text by word, wraps long labels, or sets values a space after labels", () => {
    const run = (str: string, x: number, y: number, w: number) => ({ str, x, y, w });
    const text = ReceiptText.fromPages([
      [
        run("Сумма", 32, 600, 30),
        run("операции", 65, 600, 45),
        run("1", 210, 600, 6),
        run("500,00", 219, 600, 34),
        run("₽", 256, 600, 6),
        run("Номер телефона", 32, 580, 80),
        run("+79001234567", 210, 574, 70),
        run("получателя", 32, 568, 60),
        run("Итого 1 500 ₽", 32, 550, 70),
      ],
    ]);
    expect(text.lines.slice(0, 2)).toEqual([
      ["Сумма операции", "1 500,00 ₽"],
      ["Номер телефона получателя", "+79001234567"],
    ]);
    expect(text.value(/Итого/)).toBe("1 500 ₽");
  });

  it("takes failure words before success words", () => {
    expect([classifyStatus("Не выполнен"), classifyStatus("Готово"), classifyStatus("В обработке")]).toEqual([
      "failed",
      "success",
      "in_progress",
    ]);
  });
});
