import type { Decimal } from "@gw/money";
import {
  classifyStatus,
  parseAmount,
  parseAmounts,
  parseDateTime,
  parseMaskedCard,
  parsePhone,
  type ReceiptText,
} from "./text.ts";

/** What a layout module reads from a receipt. Absent fields were not found. */
export interface Extraction {
  layout: string;
  /** The transfer's amount (without fee). */
  amount?: Decimal | undefined;
  /** Every amount reading of the transfer the receipt prints (each amount label's); they must agree. */
  amountReadings: string[];
  /** The fee as printed ("Комиссия"), if any. */
  fee?: string | undefined;
  /** Totals as printed ("Итого", "Сумма с комиссией", "Списано"…): the amount plus the fee. */
  totals: string[];
  /** Every labelled date of the operation as printed ("Дата операции", "Дата и время перевода"…). */
  operationDates: string[];
  /** When the money arrived or the transfer was carried out, as printed ("Дата зачисления"…). */
  completionDates: string[];
  recipientName?: string | undefined;
  recipientCard?: { head: string; tail: string } | undefined;
  /** "7XXXXXXXXXX" with "?" for masked digits. */
  recipientPhone?: string | undefined;
  recipientBank?: string | undefined;
  dateTime?: Date | undefined;
  status?: "success" | "in_progress" | "failed" | undefined;
  statusTexts: string[];
  /** The SBP operation id when shown (unique across banks), else the bank's document number. */
  transactionId?: string | undefined;
  /** The transfer itself, without identifiers: set by the review once the issuer is known (reuse.ts). */
  transferKey?: string | undefined;
}

/** One receipt layout: how to recognise it and where its fields are. */
export interface Layout {
  id: string;
  recognise(text: ReceiptText): boolean;
  extract(text: ReceiptText): Extraction;
}

/** Label patterns of one layout; each is matched against a whole label cell. */
export interface LayoutLabels {
  amount: RegExp;
  date: RegExp;
  status: RegExp;
  name: RegExp;
  card: RegExp;
  phone: RegExp;
  bank: RegExp;
  sbpId: RegExp;
  documentNumber: RegExp;
  /** Where the date is printed without a label (e.g. right under the header). */
  unlabelledDate?: boolean;
  /** Where the status is printed as a line of its own ("Операция выполнена"). */
  statusLine?: RegExp;
}

/**
 * The same facts under the labels any Russian bank may print them with: a module reads
 * its own labels and these, so a bank's wording that its module did not list is still
 * read by meaning ("Сумма" for "Сумма перевода", "Дата перевода" for "Дата и время
 * перевода").
 */
const SYNONYMS: Omit<LayoutLabels, "unlabelledDate" | "statusLine"> = {
  amount: /Сумма( перевода| операции| платежа| в валюте операции)?/,
  date: /Дата( и время| \/ время|\/время)?( операции| перевода| платежа)?|Дата и время/,
  status: /Статус( операции| перевода| платежа)?/,
  name: /(ФИО |Имя )?[Пп]олучател[ья]( платежа)?|Кому/,
  card: /(Номер )?[Кк]арт[аы] получателя|Карта зачисления/,
  phone: /(Номер )?[Тт]елефона? получателя/,
  bank: /Банк получателя/,
  sbpId: /Идентификатор (операции )?(в )?СБП|Идентификатор операции|Номер операции (в )?СБП/,
  documentNumber: /Номер (документа|операции|квитанции)|Квитанция №/,
};

/** Labels of the fee, of the total it makes with the amount, and of the moment the money arrived. */
const FEE = /Комиссия( за перевод| банка)?/;
const TOTAL =
  /Итого( к списанию| с комиссией)?|Сумма (с комиссией|с учётом комиссии|с учетом комиссии|списания|к списанию)|Списано|Всего( к списанию)?/;
const COMPLETED = /Дата( и время)? (зачисления|исполнения)|Исполнен[ао]?|Зачислен[ао]?/;

/** A transaction identifier as characters only: spaces, dashes and case are layout, not identity. */
export const identifier = (s: string) => s.replace(/[^0-9A-Za-zА-Яа-яЁё]/g, "").toUpperCase();

/** Builds a layout module from its recognition rule and labels (widened by the common synonyms). */
export function labelledLayout(
  id: string,
  recognise: (t: ReceiptText) => boolean,
  own: LayoutLabels,
): Layout {
  const labels: LayoutLabels = { ...own };
  for (const key of Object.keys(SYNONYMS) as (keyof typeof SYNONYMS)[])
    labels[key] = new RegExp(`${own[key].source}|${SYNONYMS[key].source}`);
  return {
    id,
    recognise,
    extract(text) {
      const amounts = text.values(labels.amount);
      const statusTexts = text.values(labels.status);
      if (labels.statusLine)
        for (const line of text.lines) {
          const joined = line.join(" ");
          if (labels.statusLine.test(joined)) statusTexts.push(joined);
        }
      const statuses = new Set(statusTexts.map(classifyStatus).filter((s) => s !== undefined));
      const sbpId = identifier(text.identifierValue(labels.sbpId) ?? "");
      const documentNumber = identifier(text.value(labels.documentNumber) ?? "");
      let dateTime = parseDateTime(text.value(labels.date));
      if (!dateTime && labels.unlabelledDate)
        for (const line of text.lines.slice(0, 6)) {
          dateTime = parseDateTime(line.join(" "));
          if (dateTime) break;
        }
      const readings = amounts.flatMap((v) => {
        const found = parseAmounts(v);
        return found.length > 0 ? found.map((a) => a.toFixed(2)) : [`unreadable "${v}"`];
      });
      return {
        layout: id,
        amount: parseAmount(amounts[0]),
        amountReadings: readings,
        fee: text.value(FEE),
        totals: text.values(TOTAL),
        operationDates: text.values(labels.date),
        // Beside the label only: "Исполнено" alone on a line is a status, not a label.
        completionDates: text.values(COMPLETED, { besideOnly: true }),
        recipientName: text.value(labels.name),
        recipientCard: parseMaskedCard(text.value(labels.card)),
        recipientPhone: parsePhone(text.value(labels.phone)),
        recipientBank: text.value(labels.bank),
        dateTime,
        // Several different statuses on one receipt make no single status.
        status: statuses.size === 1 ? [...statuses][0] : undefined,
        statusTexts,
        transactionId: sbpId ? `sbp:${sbpId}` : documentNumber ? `${id}:${documentNumber}` : undefined,
      };
    },
  };
}
