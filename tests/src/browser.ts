import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@gw/stack/stack";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

/**
 * Headless Chromium for the browser tests: Debian's `chromium` package driven by
 * playwright-core (never a browser build of its own). Screenshots go to
 * `test-results/screenshots/` as test artifacts.
 */

// The callbacks of `page.evaluate` run in the page, where the DOM exists; the tests'
// own program is typed for Node without the DOM library, so they are typed loosely.
// biome-ignore lint/suspicious/noExplicitAny: the page's globals, seen from Node's types.
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above.
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above.
declare const getComputedStyle: (el: any) => any;
// biome-ignore lint/suspicious/noExplicitAny: as above.
type El = any;

export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = join(REPO_ROOT, "test-results", "screenshots");

/** The two widths every page is checked at. */
export const VIEWPORTS = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 800 },
} as const;
export type ViewportName = keyof typeof VIEWPORTS;

/** Starts one headless Chromium for a test file. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A browser context of one viewport that records every request the pages make, so a
 * test can assert that nothing left the origin under test.
 */
export async function newContext(
  browser: Browser,
  viewport: ViewportName,
  options: { locale?: string } = {},
): Promise<{ context: BrowserContext; requests: string[] }> {
  const context = await browser.newContext({
    viewport: VIEWPORTS[viewport],
    locale: options.locale ?? "en-US",
    deviceScaleFactor: 1,
    isMobile: viewport === "phone",
    hasTouch: viewport === "phone",
  });
  const requests: string[] = [];
  context.on("request", (r) => requests.push(r.url()));
  return { context, requests };
}

/** Saves a full-page screenshot as `<name>-<viewport>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const size = page.viewportSize();
  const tag = size && size.width <= 500 ? "phone" : "desktop";
  const path = join(SCREENSHOTS, `${name}-${tag}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** True when the page is as wide as the viewport: nothing overflows sideways on a phone. */
export function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/**
 * Every form control has a label (a `<label for>`, a wrapping label or an aria-label);
 * returns the names of the controls without one.
 */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((el: El) => (el as El).type !== "hidden")
      .filter((el: El) => {
        const id = el.getAttribute("id");
        return !(
          (id && document.querySelector(`label[for="${id}"]`)) ||
          el.closest("label") ||
          el.getAttribute("aria-label") ||
          el.getAttribute("aria-labelledby")
        );
      })
      .map((el: El) => el.getAttribute("name") ?? el.tagName),
  );
}

/**
 * The lowest contrast ratio (WCAG 2) between the text colour and the background of every
 * visible element with text of its own, walking up to the first opaque background.
 */
export function lowestContrast(page: Page): Promise<{ ratio: number; text: string }> {
  return page.evaluate(() => {
    const parse = (c: string) => {
      const m = c.match(/rgba?\(([^)]+)\)/);
      const [r = 0, g = 0, b = 0, a = 1] = (m?.[1] ?? "0,0,0,0").split(",").map((x) => Number(x.trim()));
      return { r, g, b, a: m?.[1]?.split(",").length === 4 ? a : 1 };
    };
    const lum = ({ r, g, b }: { r: number; g: number; b: number }) => {
      const ch = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b);
    };
    const background = (el: El): { r: number; g: number; b: number } => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c.a > 0.5) return c;
      }
      return { r: 255, g: 255, b: 255 };
    };
    let worst = { ratio: 21, text: "" };
    for (const el of document.body.querySelectorAll("*")) {
      const own = [...el.childNodes].some((n: El) => n.nodeType === 3 && n.textContent?.trim());
      const box = (el as El).getBoundingClientRect();
      if (!own || box.width === 0 || box.height === 0) continue;
      const style = getComputedStyle(el);
      if (style.visibility === "hidden" || Number(style.opacity) < 0.5) continue;
      const fg = lum(parse(style.color));
      const bg = lum(background(el));
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      if (ratio < worst.ratio) worst = { ratio, text: el.textContent?.trim().slice(0, 60) ?? "" };
    }
    return worst;
  });
}

/** The accessible names of the first `count` elements that Tab reaches, in order. */
export async function tabOrder(page: Page, count: number): Promise<string[]> {
  await page.evaluate(() => (document.activeElement as El)?.blur());
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    await page.keyboard.press("Tab");
    names.push(
      await page.evaluate(() => {
        const el = document.activeElement as El;
        if (!el) return "";
        const id = el.getAttribute("id");
        const label = id ? document.querySelector(`label[for="${id}"]`)?.textContent : undefined;
        return `${el.tagName.toLowerCase()}:${(label ?? el.getAttribute("aria-label") ?? el.textContent ?? "").trim()}`;
      }),
    );
  }
  return names;
}
