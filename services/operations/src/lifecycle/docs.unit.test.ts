import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { STORED_STATUS, TRANSITIONS } from "./table.ts";

const ARCHITECTURE = new URL("../../../../docs/architecture.md", import.meta.url);

describe("docs/architecture.md", () => {
  it("shows the lifecycle table exactly as the code has it", () => {
    const doc = readFileSync(ARCHITECTURE, "utf8");
    const rows = doc.split("\n").filter((l) => /^\| `[a-z_]+` \| `[a-z_]+` \| `[a-z_]+` \|/.test(l));
    const expected = TRANSITIONS.map(
      (r) =>
        `| \`${r.from}\` | \`${r.fact}\` | \`${r.to}\` | ${r.emits ? `\`<type>.${STORED_STATUS[r.to]}\`` : "—"} | ${r.when} |`,
    );
    expect(rows).toEqual(expected);
  });
});
