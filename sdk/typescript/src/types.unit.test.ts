import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { KNOWN_ERROR_CODES } from "./types.ts";

// The SDK is published on its own, so it keeps its list of codes rather than import the
// gateway's; this holds the list to the merchant codes of the OpenAPI document it is
// generated from (`pnpm --filter @gw/sdk generate:openapi`), whose `info["x-error-codes"]`
// the edge writes from the gateway's one table of codes (libs/api PUBLIC_ERRORS).

const document = JSON.parse(readFileSync(new URL("./gen/openapi.json", import.meta.url), "utf8")) as {
  info: { description: string; "x-error-codes"?: { merchant: string[]; admin: string[] } };
};

describe("KNOWN_ERROR_CODES", () => {
  it("are the merchant API's codes the OpenAPI document lists", () => {
    const merchant = document.info["x-error-codes"]?.merchant;
    expect(merchant, "info.x-error-codes.merchant").toBeDefined();
    expect([...KNOWN_ERROR_CODES].sort()).toEqual([...(merchant ?? [])].sort());
    expect(new Set(KNOWN_ERROR_CODES).size).toBe(KNOWN_ERROR_CODES.length);
  });

  it("each appear in the document's merchant Errors table", () => {
    const section = document.info.description.split("### Merchant API")[1]?.split("###")[0] ?? "";
    for (const code of KNOWN_ERROR_CODES) expect(section, code).toContain(`| \`${code}\` |`);
  });
});
