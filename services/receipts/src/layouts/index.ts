import { alfabank } from "./alfabank.ts";
import { fallback } from "./fallback.ts";
import { sberbank } from "./sberbank.ts";
import { tbank } from "./tbank.ts";
import type { ReceiptText } from "./text.ts";
import type { Extraction, Layout } from "./types.ts";
import { vtb } from "./vtb.ts";

/** The known layouts, tried in order; the fallback reads anything else. */
export const LAYOUTS: readonly Layout[] = [sberbank, tbank, vtb, alfabank];

/** Reads a receipt with the first layout that recognises it, or the fallback. */
export function extract(text: ReceiptText): Extraction {
  const layout = LAYOUTS.find((l) => l.recognise(text)) ?? fallback;
  return layout.extract(text);
}

export type { Extraction, Layout };
