import { normalise } from "../layouts/text.ts";
import type { TextItem } from "../pdf/text-types.ts";

/** Baselines closer than this (points) are one line. */
const SAME_LINE = 1.5;
/** Two runs sharing more than this part of the narrower one's width sit on top of each other. */
const OVERLAP = 0.5;
/** Pages with more runs than this are not compared pairwise (a receipt has a few dozen). */
const MAX_ITEMS = 2000;

/**
 * Text typed over other text: two different runs on the same baseline, one lying over
 * most of the other. No writer lays a receipt out like that; an editor's overlay does
 * (a white box drawn over a value and the new value typed on it leaves the old run in
 * the file, under the box). Returns what an operator reads, one line per place.
 */
export function overlaidText(pages: readonly (readonly TextItem[])[]): string[] {
  const found: string[] = [];
  pages.forEach((items, p) => {
    const runs = items
      .filter((i) => (i.w ?? 0) > 0 && normalise(i.str).length > 0)
      .slice(0, MAX_ITEMS)
      .sort((a, b) => a.y - b.y);
    for (let i = 0; i < runs.length; i++) {
      const a = runs[i] as TextItem;
      for (let j = i + 1; j < runs.length; j++) {
        const b = runs[j] as TextItem;
        if (b.y - a.y > SAME_LINE) break;
        if (normalise(a.str) === normalise(b.str)) continue;
        const shared = Math.min(a.x + (a.w ?? 0), b.x + (b.w ?? 0)) - Math.max(a.x, b.x);
        if (shared > OVERLAP * Math.min(a.w ?? 0, b.w ?? 0))
          found.push(
            `page ${p + 1}: "${normalise(a.str)}" and "${normalise(b.str)}" on one another at (${Math.round(a.x)}, ${Math.round(a.y)})`,
          );
      }
    }
  });
  return found;
}
