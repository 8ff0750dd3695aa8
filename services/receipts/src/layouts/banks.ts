/**
 * The issuing banks the review can name, with what identifies each on its own receipts:
 * its brand (old and new), and the number of its Bank of Russia licence printed in the
 * footer. Layout modules are named after the bank whose receipts they read.
 */
export interface IssuerBank {
  id: string;
  /** How operators read the bank's name. */
  name: string;
  brand: RegExp;
  licence?: string | undefined;
}

export const ISSUERS: readonly IssuerBank[] = [
  { id: "sberbank", name: "СберБанк", brand: /сбер/i, licence: "1481" },
  { id: "tbank", name: "Т-Банк", brand: /(?<![а-яё])т-?банк|тинькофф|\btbank\b|tinkoff/i, licence: "2673" },
  { id: "vtb", name: "ВТБ", brand: /(?<![а-яё])втб(?![а-яё])|\bvtb\b/i, licence: "1000" },
  { id: "alfabank", name: "Альфа-Банк", brand: /альфа-?банк|alfa-?bank/i, licence: "1326" },
  { id: "raiffeisen", name: "Райффайзенбанк", brand: /райффайзен|raiffeisen/i, licence: "3292" },
  { id: "gazprombank", name: "Газпромбанк", brand: /газпромбанк/i, licence: "354" },
  { id: "ozon", name: "Озон Банк", brand: /озон ?банк|ozon ?bank/i },
  { id: "psb", name: "ПСБ", brand: /промсвязьбанк|(?<![а-яё])псб(?![а-яё])/i, licence: "3251" },
  { id: "sovcombank", name: "Совкомбанк", brand: /совкомбанк/i, licence: "963" },
  { id: "rosbank", name: "Росбанк", brand: /росбанк/i, licence: "2272" },
  { id: "pochtabank", name: "Почта Банк", brand: /почта ?банк/i, licence: "650" },
  { id: "mtsbank", name: "МТС Банк", brand: /мтс ?банк/i, licence: "2268" },
];

export const issuerById = (id: string) => ISSUERS.find((b) => b.id === id);
