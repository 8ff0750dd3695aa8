import { labelledLayout } from "./types.ts";

/**
 * СберБанк Онлайн "Чек по операции" for card-to-card ("Перевод клиенту СберБанка",
 * "Перевод с карты на карту") and SBP ("Перевод по СБП") transfers: the date under the
 * title with "(МСК)", the amount as "Сумма перевода", the card masked as "•••• 1234".
 */
export const sberbank = labelledLayout(
  "sberbank",
  (t) => t.headerHas(/^СберБанк$|^ПАО Сбербанк$/i) && t.headerHas(/^Чек по операции$/i),
  {
    amount: /Сумма перевода|Сумма операции/,
    date: /Дата операции|Дата и время операции/,
    unlabelledDate: true,
    status: /Статус( операции)?/,
    name: /ФИО получателя|Получатель/,
    card: /Номер карты получателя|Карта получателя/,
    phone: /Телефон получателя|Номер телефона получателя/,
    bank: /Банк получателя/,
    sbpId: /Идентификатор операции( в СБП)?|Номер операции в СБП/,
    documentNumber: /Номер документа/,
  },
);
