import {
  classifyStatus,
  parseAmount,
  parseAmounts,
  parseMaskedCard,
  parsePhone,
  type ReceiptText,
} from "./text.ts";
import { type Extraction, type Layout, labelledLayout } from "./types.ts";

const generic = labelledLayout("fallback", () => true, {
  amount: /Сумма( перевода| операции| платежа)?|Amount/,
  date: /Дата( и время)?( операции| перевода| платежа)?|Date/,
  unlabelledDate: true,
  status: /Статус( операции| перевода)?|Status/,
  statusLine: /^(Перевод|Операция|Платеж|Платёж) (выполнен|исполнен|успешн|в обработке|отклонен)/i,
  name: /(ФИО )?Получател[ья]|Recipient/,
  card: /(Номер )?[Кк]арт[аы] получателя|Карта|Card/,
  phone: /(Номер )?[Тт]елефон(а)?( получателя)?|Phone/,
  bank: /Банк получателя|Банк/,
  sbpId: /Идентификатор (операции )?(в )?СБП|Идентификатор операции|Номер операции в СБП/,
  documentNumber: /Номер (документа|операции|квитанции)|Квитанция №/,
});

/**
 * For receipts of banks without a module: the usual labels of Russian receipts, then
 * bare patterns over the whole text (a masked card, a +7 phone, an amount with ₽). The
 * review treats anything missing as "cannot be validated" (manual_check, not_terminal),
 * so an unknown layout completes only when every field was found and matched.
 */
export const fallback: Layout = {
  id: "fallback",
  recognise: () => true,
  extract(text: ReceiptText): Extraction {
    const found = generic.extract(text);
    const full = text.full;
    // A total is the amount only when no fee is added to it.
    const feeless = parseAmounts(found.fee).every((f) => f.isZero());
    const amount =
      found.amount ??
      (feeless ? parseAmount(found.totals[0]) : undefined) ??
      parseAmount(/\d[\d \u00a0]*(?:[.,]\d{2})?\s*(?:₽|руб|RUB|RUR)/i.exec(full)?.[0]);
    return {
      ...found,
      amount,
      amountReadings:
        found.amountReadings.length > 0 ? found.amountReadings : amount ? [amount.toFixed(2)] : [],
      recipientCard: found.recipientCard ?? parseMaskedCard(/\d{0,6}[*•]{2,}[ *•]*\d{4}/.exec(full)?.[0]),
      recipientPhone: found.recipientPhone ?? parsePhone(/\+7[\d\s()*•-]{10,18}/.exec(full)?.[0]),
      status:
        found.status ??
        classifyStatus(
          text.lines
            .slice(0, 6)
            .map((l) => l.join(" "))
            .join(" "),
        ),
    };
  },
};
