import { describe, expect, it } from "vitest";
import { Decimal, formatAmount, quotedRate, settlementFigures } from "./index.ts";

const terms = { percent: "2", fixed: "100.00" };

describe("settlementFigures", () => {
  it("caps a payin's commission at the captured amount, so a fee above it settles zero, never below", () => {
    const f = settlementFigures({
      amount: new Decimal("50.00"),
      settlementCurrency: "RUB",
      terms,
      direction: "payin",
    });
    expect(formatAmount(f.commission, "RUB")).toBe("50.00");
    expect(formatAmount(f.settlement, "RUB")).toBe("0.00");
    expect(f.settlement.plus(f.commission).eq(f.converted)).toBe(true);
  });

  it("charges a payin its whole fee when the captured amount covers it", () => {
    const f = settlementFigures({
      amount: new Decimal("1000.00"),
      settlementCurrency: "RUB",
      terms,
      direction: "payin",
    });
    expect(formatAmount(f.commission, "RUB")).toBe("120.00");
    expect(formatAmount(f.settlement, "RUB")).toBe("880.00");
  });

  it("charges a payout its whole fee on top of the amount, whatever the amount", () => {
    const f = settlementFigures({
      amount: new Decimal("50.00"),
      settlementCurrency: "RUB",
      terms,
      direction: "payout",
    });
    expect(formatAmount(f.commission, "RUB")).toBe("101.00");
    expect(formatAmount(f.settlement, "RUB")).toBe("151.00");
  });

  it("converts at the rate as shown, six decimals, so recorded = actual × shown rate", () => {
    const f = settlementFigures({
      amount: new Decimal("1000.00"),
      settlementCurrency: "USDT",
      fxRate: new Decimal("0.012345678912"),
      terms: { percent: "0", fixed: "0" },
      direction: "payin",
    });
    // Shown: 0.012346. 1000 × 0.012346 = 12.346000 (the stored twelve places would give 12.345679).
    expect(quotedRate(new Decimal("0.012345678912")).toFixed(6)).toBe("0.012346");
    expect(formatAmount(f.converted, "USDT")).toBe("12.346000");
  });
});
