/**
 * The page's words in Russian and English. The language comes from `?lang=` when given
 * (the switch on every page sets it), otherwise from `Accept-Language`; Russian when the
 * browser prefers it, English otherwise.
 */

export type Lang = "ru" | "en";
export const LANGS: readonly Lang[] = ["ru", "en"];

const en = {
  title: "Payment",
  notFoundTitle: "Payment not found",
  notFoundText: "This payment link is not valid or has expired.",
  amountToPay: "Amount to pay",
  payingTo: "You are paying",
  backToShop: "Back to",
  requisites: "Transfer to",
  card: "Card number",
  phone: "Phone number",
  holder: "Recipient",
  bank: "Bank",
  copy: "Copy",
  copied: "Copied",
  timeLeft: "Time left to pay",
  timeUp: "The time to pay is up.",
  stepsTitle: "What to do next",
  stepsProvider: [
    "Open your bank's app.",
    "Transfer exactly the amount shown to the requisites above.",
    "Keep this page open: it updates as soon as the payment arrives.",
  ],
  stepsReceipt: [
    "Open your bank's app.",
    "Transfer exactly the amount shown to the requisites above.",
    "Download the receipt of the transfer as a PDF and upload it below.",
  ],
  receiptTitle: "Upload the receipt",
  receiptLabel: "Receipt of the transfer (PDF, up to {max} MB)",
  receiptHint: "In your bank's app open the transfer and choose “Receipt” → “Save as PDF”.",
  upload: "Upload receipt",
  uploading: "Uploading…",
  checking: "Checking the receipt…",
  errNoFile: "Choose the PDF receipt of your transfer first.",
  errNotPdf:
    "This file is not a PDF. Download the receipt from your bank's app as a PDF and upload that file.",
  errTooLarge: "This file is too large: the receipt must be at most {max} MB.",
  errEmpty: "This file is empty. Choose the PDF receipt of your transfer.",
  errAlreadyReviewed: "A receipt for this payment has already been checked.",
  errInProgress: "Your previous receipt is still being checked. Wait a moment and reload the page.",
  errNotAwaiting: "This payment does not take a receipt now.",
  errUnavailable: "The receipt could not be checked right now. Try again in a minute.",
  errNetwork: "The upload did not go through. Check your connection and try again.",
  waiting: "Waiting for your payment…",
  outcomes: {
    paid: { title: "Payment received", text: "Thank you. The payment has arrived; you can close this page." },
    under_review: {
      title: "Payment under review",
      text: "We are checking your receipt by hand. This usually takes a few minutes; the shop will be told the result.",
    },
    declined: {
      title: "Payment declined",
      text: "This payment was not accepted. If you have transferred money, contact the shop with your receipt.",
    },
    expired: {
      title: "Payment expired",
      text: "The time to pay has run out. Do not transfer money to these requisites; return to the shop to start again.",
    },
  },
  paidAmount: "Amount received",
  language: "Язык: русский",
  // Flexible links.
  pickTitle: "Choose the amount",
  pickIntro:
    "The exact amount is not available right now. Choose an amount you can pay from those available.",
  pickAmountLabel: "Amount ({currency})",
  pickAmountHint: "Available: {ranges}",
  pickRangesLabel: "Available amounts",
  pickConfirm: "Continue with this amount",
  pickTaken:
    "That amount was just taken by someone else. The available amounts were refreshed: please choose again.",
  pickOutside: "This amount is not available. Choose one of the available amounts.",
  pickInvalid: "Enter an amount such as 1500.00.",
  pickNone: "No amount can be paid right now. Try again later or return to the shop.",
  linkExpiredTitle: "Link expired",
  linkExpiredText:
    "This payment link has expired and no payment was created. Return to the shop to start again.",
  recommended: "Requested amount",
  from: "from",
  to: "to",
};

export type Messages = typeof en;

const ru: Messages = {
  title: "Оплата",
  notFoundTitle: "Платёж не найден",
  notFoundText: "Эта ссылка на оплату недействительна или устарела.",
  amountToPay: "Сумма к оплате",
  payingTo: "Получатель платежа",
  backToShop: "Вернуться в",
  requisites: "Куда перевести",
  card: "Номер карты",
  phone: "Номер телефона",
  holder: "Получатель",
  bank: "Банк",
  copy: "Копировать",
  copied: "Скопировано",
  timeLeft: "Осталось времени на оплату",
  timeUp: "Время на оплату истекло.",
  stepsTitle: "Что делать дальше",
  stepsProvider: [
    "Откройте приложение своего банка.",
    "Переведите точно указанную сумму по реквизитам выше.",
    "Не закрывайте эту страницу: она обновится, как только платёж поступит.",
  ],
  stepsReceipt: [
    "Откройте приложение своего банка.",
    "Переведите точно указанную сумму по реквизитам выше.",
    "Скачайте чек перевода в PDF и загрузите его ниже.",
  ],
  receiptTitle: "Загрузите чек",
  receiptLabel: "Чек перевода (PDF, до {max} МБ)",
  receiptHint: "В приложении банка откройте перевод и выберите «Чек» → «Сохранить в PDF».",
  upload: "Загрузить чек",
  uploading: "Загрузка…",
  checking: "Проверяем чек…",
  errNoFile: "Сначала выберите PDF-чек перевода.",
  errNotPdf: "Этот файл не PDF. Скачайте чек в приложении банка в формате PDF и загрузите его.",
  errTooLarge: "Файл слишком большой: чек должен быть не больше {max} МБ.",
  errEmpty: "Файл пустой. Выберите PDF-чек перевода.",
  errAlreadyReviewed: "Чек по этому платежу уже проверен.",
  errInProgress: "Предыдущий чек ещё проверяется. Подождите немного и обновите страницу.",
  errNotAwaiting: "Сейчас этот платёж не принимает чек.",
  errUnavailable: "Сейчас не удалось проверить чек. Попробуйте через минуту.",
  errNetwork: "Загрузка не удалась. Проверьте соединение и попробуйте снова.",
  waiting: "Ждём ваш платёж…",
  outcomes: {
    paid: { title: "Платёж получен", text: "Спасибо! Деньги поступили, эту страницу можно закрыть." },
    under_review: {
      title: "Платёж на проверке",
      text: "Мы проверяем ваш чек вручную. Обычно это занимает несколько минут; магазин узнает результат.",
    },
    declined: {
      title: "Платёж отклонён",
      text: "Платёж не принят. Если вы уже перевели деньги, обратитесь в магазин с чеком.",
    },
    expired: {
      title: "Время оплаты истекло",
      text: "Срок оплаты закончился. Не переводите деньги по этим реквизитам; вернитесь в магазин, чтобы начать заново.",
    },
  },
  paidAmount: "Поступило",
  language: "Language: English",
  pickTitle: "Выберите сумму",
  pickIntro: "Точная сумма сейчас недоступна. Выберите сумму из доступных.",
  pickAmountLabel: "Сумма ({currency})",
  pickAmountHint: "Доступно: {ranges}",
  pickRangesLabel: "Доступные суммы",
  pickConfirm: "Продолжить с этой суммой",
  pickTaken: "Эту сумму только что заняли. Доступные суммы обновлены: выберите снова.",
  pickOutside: "Эта сумма недоступна. Выберите одну из доступных сумм.",
  pickInvalid: "Введите сумму, например 1500.00.",
  pickNone: "Сейчас нет доступных сумм. Попробуйте позже или вернитесь в магазин.",
  linkExpiredTitle: "Ссылка устарела",
  linkExpiredText: "Срок действия ссылки истёк, платёж не создан. Вернитесь в магазин, чтобы начать заново.",
  recommended: "Запрошенная сумма",
  from: "от",
  to: "до",
};

const MESSAGES: Record<Lang, Messages> = { en, ru };

/** The messages of one language. */
export const messages = (lang: Lang): Messages => MESSAGES[lang];

/** `{name}` placeholders filled from `values`. */
export const fill = (text: string, values: Record<string, string>) =>
  text.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? m);

/** The page language: `?lang=` first, then the browser's preference, English by default. */
export function pickLang(query: string | undefined, acceptLanguage: string | undefined): Lang {
  if (query === "ru" || query === "en") return query;
  const prefs = (acceptLanguage ?? "")
    .split(",")
    .map((part) => {
      const [tag = "", ...params] = part.trim().toLowerCase().split(";");
      const q = params.map((p) => /^q=([\d.]+)$/.exec(p.trim())?.[1]).find(Boolean);
      return { tag, q: q === undefined ? 1 : Number(q) };
    })
    .filter((p) => p.tag && p.q > 0)
    .sort((a, b) => b.q - a.q);
  for (const p of prefs) {
    const base = p.tag.split("-")[0];
    if (base === "ru" || base === "en") return base;
  }
  return "en";
}
