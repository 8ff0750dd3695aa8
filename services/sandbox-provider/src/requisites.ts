import { createHash } from "node:crypto";
import type { Behaviour } from "./db/schema.ts";

/** The bank code reported with phone requisites when the provider's settings name none. */
export const DEFAULT_BANK_CODE = "sberbank";

/** Appends the Luhn check digit to a string of digits. */
function withLuhn(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    // Counting from the right of the final number, the check digit is position 1, so the
    // last digit here is position 2 and is doubled.
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits + String((10 - (sum % 10)) % 10);
}

/** Decimal digits derived from a seed, so one operation always gets the same requisites. */
function digitsFrom(seed: string, count: number): string {
  const hash = createHash("sha256").update(seed).digest();
  let out = "";
  for (let i = 0; out.length < count; i++) out += String(hash[i % hash.length]! % 10);
  return out;
}

/**
 * The destination the payer pays to: a Luhn-valid card number (Mir range 2200) on the
 * card rail, a Russian mobile number and a bank code on the phone rail. Fixed values from
 * the provider's settings win over the generated ones.
 */
export function requisitesFor(
  rail: "card" | "phone",
  seed: string,
  fixed: Behaviour["requisites"],
): { number: string; name?: string; bankname?: string } {
  const name = fixed?.holder_name;
  if (rail === "card") {
    const number = fixed?.card_number ?? withLuhn(`2200${digitsFrom(seed, 11)}`);
    return name ? { number, name } : { number };
  }
  const number = fixed?.phone ?? `+79${digitsFrom(seed, 9)}`;
  const bankname = fixed?.bank_code ?? DEFAULT_BANK_CODE;
  return name ? { number, name, bankname } : { number, bankname };
}
