import { labelledLayout } from "./types.ts";

/**
 * ВТБ Онлайн "Квитанция об операции": "Дата и время" labelled, "Исполнено" as success,
 * "Сумма операции", the card masked in groups ("2202 20** **** 1234").
 */
export const vtb = labelledLayout(
  "vtb",
  (t) => t.headerHas(/^ВТБ$|^Банк ВТБ/i) && t.headerHas(/^Квитанция об операции$/i),
  {
    amount: /Сумма операции|Сумма перевода/,
    date: /Дата и время( операции)?/,
    status: /Статус/,
    name: /Получатель|ФИО получателя/,
    card: /Карта получателя|Номер карты получателя/,
    phone: /Телефон получателя/,
    bank: /Банк получателя/,
    sbpId: /Идентификатор операции СБП|Номер операции в СБП/,
    documentNumber: /Номер операции/,
  },
);
