/**
 * The RUB bank dictionary: stable codes accepted in `bankname` for phone (SBP) transfers,
 * with the human-readable name returned as `bankname_details`. Codes are lowercase
 * latin and never change once published; names follow the banks' own spelling.
 */
export const RUB_BANKS: Readonly<Record<string, string>> = {
  sberbank: "Сбербанк",
  tinkoff: "Т-Банк",
  vtb: "Банк ВТБ",
  alfabank: "Альфа-Банк",
  raiffeisen: "Райффайзенбанк",
  gazprombank: "Газпромбанк",
  otkritie: "Банк Открытие",
  sovcombank: "Совкомбанк",
  rosbank: "Росбанк",
  psb: "ПСБ",
  mkb: "Московский кредитный банк",
  pochtabank: "Почта Банк",
  rshb: "Россельхозбанк",
  uralsib: "Банк Уралсиб",
  ozonbank: "Озон Банк",
  yoomoney: "ЮMoney",
  mtsbank: "МТС Банк",
  homecredit: "Хоум Банк",
  akbars: "Ак Барс Банк",
  russtandard: "Банк Русский Стандарт",
};

/** Bank dictionaries per currency; a `bankname` must come from its method's currency. */
export const BANKS_BY_CURRENCY: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  RUB: RUB_BANKS,
};

export function bankDetails(currency: string, code: string | null | undefined): string | undefined {
  if (!code) return undefined;
  return BANKS_BY_CURRENCY[currency]?.[code];
}
