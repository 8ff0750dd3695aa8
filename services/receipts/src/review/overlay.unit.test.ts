import { describe, expect, it } from "vitest";
import { overlaidText } from "./overlay.ts";

const run = (str: string, x: number, y: number, w: number) => ({ str, x, y, w });

describe("text typed over other text", () => {
  it("finds a new amount lying over the old one", () => {
    expect(
      overlaidText([
        [run("Сумма", 32, 500, 40), run("1 000,00 ₽", 210, 500, 60), run("1 500,00", 210, 500.4, 48)],
      ]),
    ).toHaveLength(1);
  });

  it("leaves a label and its value, neighbouring words and a run drawn twice alone", () => {
    const page = [
      run("Сумма", 32, 500, 40),
      run("1 500,00 ₽", 210, 500, 60),
      run("Номер", 32, 478, 30),
      run("карты", 63, 478, 28),
      run("Выполнено", 210, 456, 50),
      run("Выполнено", 210.4, 456, 50),
    ];
    expect(overlaidText([page])).toEqual([]);
  });

  it("ignores runs whose width is unknown", () => {
    expect(
      overlaidText([
        [
          { str: "1 000,00", x: 210, y: 500 },
          { str: "1 500,00", x: 210, y: 500 },
        ],
      ]),
    ).toEqual([]);
  });
});
