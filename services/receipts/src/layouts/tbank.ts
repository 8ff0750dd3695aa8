import { labelledLayout } from "./types.ts";

/**
 * Т-Банк (formerly Тинькофф) "Квитанция": the total first ("Итого", the amount plus
 * the fee), the amount as "Сумма", the date right under the brand, "Без комиссии" as the fee, the card masked as
 * "220220******1234", the receipt number "Квитанция № 1-…".
 */
export const tbank = labelledLayout(
  "tbank",
  (t) => t.headerHas(/^(Т-Банк|Тинькофф|TBank)$/i) && t.has(/Квитанция №/i),
  {
    amount: /Сумма/,
    date: /Дата и время/,
    unlabelledDate: true,
    status: /Статус/,
    name: /Получатель/,
    card: /Карта получателя/,
    phone: /Телефон получателя/,
    bank: /Банк получателя/,
    sbpId: /Идентификатор операции в СБП|Идентификатор операции/,
    documentNumber: /Квитанция №/,
  },
);
