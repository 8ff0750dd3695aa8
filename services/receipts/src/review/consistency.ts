// Rule 4 of the review: the receipt's text contradicts itself. Only clear contradictions
// fire: a false one holds an honest payer, which is worse than missing this weak check.
import type { Decimal } from "@gw/money";
import type { Extraction } from "../layouts/index.ts";
import { parseAmounts, parseDateTime } from "../layouts/text.ts";
import { type Finding, finding } from "./findings.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Banks print times to the minute, and two stamps of one transfer may be taken apart. */
const SLACK = 5 * MINUTE;
/** Russia spans UTC+2 to UTC+12: one stamp in Moscow time and one in the payer's differ by whole hours. */
const MAX_ZONE_GAP = 9 * HOUR;
/** Another currency, a rate: the sum cannot be checked in roubles. */
const NOT_ROUBLES = /%|USD|EUR|CNY|\$|€|¥/i;

/** A gap between two stamps of one transfer that only a time zone explains. */
const zoneGap = (ms: number) =>
  ms <= MAX_ZONE_GAP + SLACK && Math.abs(ms - Math.round(ms / HOUR) * HOUR) <= SLACK;

/** The one amount in roubles a value shows, else undefined (nothing, several, a rate, a currency). */
function single(text: string | undefined): Decimal | undefined {
  if (text === undefined || NOT_ROUBLES.test(text)) return undefined;
  const found = parseAmounts(text);
  return found.length === 1 ? found[0] : undefined;
}

/** Every way the text of one receipt contradicts itself (`text_inconsistent` findings). */
export function contradictions(x: Extraction): Finding[] {
  const out: Finding[] = [];
  const readings = new Set(x.amountReadings);
  if (readings.size > 1)
    out.push(finding("text_inconsistent", `amounts disagree: ${[...readings].join(" / ")}`));
  const statuses = new Set(x.statusTexts);
  if (x.status === undefined && statuses.size > 1)
    out.push(finding("text_inconsistent", `statuses disagree: ${[...statuses].join(" / ")}`));
  const total = totalOff(x);
  if (total) out.push(finding("text_inconsistent", total));
  const dates = datesApart(x);
  if (dates) out.push(finding("text_inconsistent", dates));
  return out;
}

/** A total printed beside the amount that is not the amount plus the fee (a fee of 0 or none is 0). */
function totalOff(x: Extraction): string | undefined {
  if (!x.amount || readingsDisagree(x)) return undefined;
  const fee = x.fee === undefined ? undefined : single(x.fee);
  if (x.fee !== undefined && fee === undefined) return undefined;
  const sum = x.amount.plus(fee ?? 0);
  for (const printed of x.totals) {
    if (NOT_ROUBLES.test(printed)) continue;
    for (const t of parseAmounts(printed))
      if (!t.equals(sum))
        return `total ${t.toFixed(2)} is not the amount ${x.amount.toFixed(2)} + fee ${(fee ?? 0).toString()}`;
  }
  return undefined;
}

/** Amounts that already disagree are reported as such; the total would only repeat it. */
const readingsDisagree = (x: Extraction) => new Set(x.amountReadings).size > 1;

/** Stamps of the transfer that cannot all be true: it arrived before it was sent, or two operation dates. */
function datesApart(x: Extraction): string | undefined {
  const ops = x.operationDates.flatMap((t) => parseDateTime(t) ?? []);
  for (const a of ops)
    for (const b of ops) {
      const gap = b.getTime() - a.getTime();
      if (gap > SLACK && !zoneGap(gap))
        return `operation dates disagree: ${a.toISOString()} and ${b.toISOString()}`;
    }
  const sent = x.dateTime;
  if (!sent) return undefined;
  for (const text of x.completionDates) {
    const done = parseDateTime(text);
    const early = done ? sent.getTime() - done.getTime() : 0;
    if (done && early > SLACK && !zoneGap(early))
      return `carried out ${done.toISOString()}, before it was made ${sent.toISOString()}`;
  }
  return undefined;
}
