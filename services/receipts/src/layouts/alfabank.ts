import { labelledLayout } from "./types.ts";

/**
 * Альфа-Банк "Квитанция о переводе": amounts in "RUR", "Дата и время перевода … мск",
 * "Номер операции" like "C16…", "Идентификатор СБП" for phone transfers.
 */
export const alfabank = labelledLayout(
  "alfabank",
  (t) => t.headerHas(/^Альфа-Банк$/i) && t.headerHas(/^Квитанция о переводе$/i),
  {
    amount: /Сумма перевода/,
    date: /Дата и время перевода/,
    status: /Статус/,
    name: /Получатель/,
    card: /Номер карты получателя/,
    phone: /Номер телефона получателя/,
    bank: /Банк получателя/,
    sbpId: /Идентификатор СБП/,
    documentNumber: /Номер операции/,
  },
);
