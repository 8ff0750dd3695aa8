import { describe, expect, it } from "vitest";
import { buildCheckoutApp, CSP } from "./app.ts";

describe("checkout", () => {
  const app = buildCheckoutApp();

  it("answers the liveness and readiness probes with 204", async () => {
    expect((await app.request("/livez")).status).toBe(204);
    expect((await app.request("/readyz")).status).toBe(204);
  });

  it("answers 503 on readiness while draining", async () => {
    const draining = buildCheckoutApp({ draining: () => true });
    expect((await draining.request("/readyz")).status).toBe(503);
  });

  it("answers a payment link with the not-found HTML page when it cannot read payments", async () => {
    const res = await app.request("/0190b2a4-6f0e-7000-8000-000000000001?k=secret");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain("Payment not found");
  });

  it("sends a strict content security policy, no referrer and no caching", async () => {
    const res = await app.request("/0190b2a4-6f0e-7000-8000-000000000001");
    expect(res.headers.get("content-security-policy")).toBe(CSP);
    expect(CSP).toContain("default-src 'none'");
    expect(CSP).toContain("script-src 'self';");
    expect(CSP).not.toMatch(/unsafe|https?:|\*/);
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("serves its own style sheet and script, and answers not found in the payer's language", async () => {
    const css = await app.request("/assets/page.css");
    expect(css.headers.get("content-type")).toMatch(/^text\/css/);
    const js = await app.request("/assets/page.js");
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    const ru = await app.request("/0190b2a4-6f0e-7000-8000-000000000001", {
      headers: { "accept-language": "ru-RU,ru;q=0.9,en;q=0.8" },
    });
    expect(ru.status).toBe(404);
    expect(await ru.text()).toContain("Платёж не найден");
  });
});
