import { describe, expect, it } from "vitest";
import type { Extraction } from "../layouts/index.ts";
import { namesAgree, recipientMismatch } from "./requisites.ts";

describe("the recipient's name against the requisites' holder", () => {
  const holder = "Юлия Андреевна Щербакова";

  it("agrees with the forms banks print: initials, upper case, masked letters, Latin letters", () => {
    for (const shown of [
      "Юлия Андреевна Щ.",
      "ЮЛИЯ А. Щ.",
      "Ю***я Щербакова",
      "Юлия Щ*******а",
      "YULIYA SHCHERBAKOVA",
      "Iuliia Shcherbakova",
      "Yulia A. S.",
    ])
      expect(namesAgree(shown, holder), shown).toBe(true);
  });

  it("disagrees with another person", () => {
    for (const shown of ["Юлия Петрова", "Ирина Андреевна Щ.", "IRINA SHCHERBAKOVA", "Ю***я Петрова"])
      expect(namesAgree(shown, holder), shown).toBe(false);
  });
});

describe("the rail", () => {
  const x = (over: Partial<Extraction>): Extraction => ({
    layout: "fallback",
    amountReadings: [],
    totals: [],
    operationDates: [],
    completionDates: [],
    statusTexts: [],
    ...over,
  });

  it("takes a phone transfer's receipt for a card payment as a contradiction, and the reverse", () => {
    expect(
      recipientMismatch(x({ recipientPhone: "79001234567" }), {
        method: "WT_RUB_C2C",
        number: "2202201234567890",
      }),
    ).toMatch(/phone/);
    expect(
      recipientMismatch(x({ recipientCard: { head: "", tail: "7890" } }), {
        method: "WT_RUB_PHONE",
        number: "+79001234567",
      }),
    ).toMatch(/card/);
    expect(recipientMismatch(x({}), { method: "WT_RUB_C2C", number: "2202201234567890" })).toBe("missing");
  });
});
