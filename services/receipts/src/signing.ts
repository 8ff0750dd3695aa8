import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Short-lived download links of receipts: `{base}/receipts/{id}?exp={unix}&sig={mac}`
 * where mac = base64url(HMAC-SHA256(secret, "receipt-url:v1\n{id}\n{shop}\n{exp}")). The
 * owning shop is inside the MAC but not in the link: a link cannot be moved to another
 * receipt, another shop or another expiry without the secret.
 */
export class ReceiptUrlSigner {
  readonly #secret: string;
  readonly #base: string;
  readonly #ttlSeconds: number;

  constructor(secret: string, base: string, ttlSeconds: number) {
    this.#secret = secret;
    this.#base = base.replace(/\/+$/, "");
    this.#ttlSeconds = ttlSeconds;
  }

  sign(receiptId: string, shopId: string, now = new Date()): { url: string; expiresAt: Date } {
    const exp = Math.floor(now.getTime() / 1000) + this.#ttlSeconds;
    const sig = this.#mac(receiptId, shopId, exp);
    return {
      url: `${this.#base}/receipts/${encodeURIComponent(receiptId)}?exp=${exp}&sig=${sig}`,
      expiresAt: new Date(exp * 1000),
    };
  }

  /** "ok", "expired" (a genuine link past its time) or "invalid" (anything altered). */
  verify(
    receiptId: string,
    shopId: string,
    exp: number,
    sig: string,
    now = new Date(),
  ): "ok" | "expired" | "invalid" {
    const want = Buffer.from(this.#mac(receiptId, shopId, exp));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return "invalid";
    return exp * 1000 <= now.getTime() ? "expired" : "ok";
  }

  #mac(receiptId: string, shopId: string, exp: number): string {
    return createHmac("sha256", this.#secret)
      .update(`receipt-url:v1\n${receiptId}\n${shopId}\n${exp}`)
      .digest("base64url");
  }
}
