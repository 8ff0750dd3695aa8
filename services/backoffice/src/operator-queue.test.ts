import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BackofficeTestDatabase,
  backofficeTestDatabase,
  get,
  login,
  testBackoffice,
} from "./testing.ts";

// The "Payouts awaiting a decision" page over a real edge app with a stand-in for operations.

let database: BackofficeTestDatabase;
beforeAll(async () => {
  database = await backofficeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const PAYOUT_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
const SHOP = "0191a5e4-7c1b-7b8e-9d4e-bbbbbbbbbbbb";

const queue = (payouts: Record<string, unknown>[]) => ({
  operations: { listOperatorQueue: async () => ({ payouts }) },
});

describe("payouts awaiting a decision", () => {
  it("lists each queued payout with its provider and what was asked, linking to the operation's page", async () => {
    const payout = {
      operationId: PAYOUT_ID,
      shopId: SHOP,
      merchantOperationId: "payout-<17>",
      amount: "1000.00",
      currency: "RUB",
      createdAt: "2026-11-24T21:00:00.000Z",
      operatorQueuedAt: "2026-11-25T21:00:03.000Z",
      unresolvedProvider: "keeper",
      passedProviders: ["refuser"],
      reconcileChecks: 41,
      nextCheckAt: "2026-11-25T21:30:00.000Z",
    };
    const { app } = testBackoffice(database, { fakes: queue([payout]) });
    const { jar } = await login(app);
    const page = await get(app, jar, "/backoffice/payouts/operator-queue");
    expect(page.res.status).toBe(200);
    expect(page.html).toContain("<title>Payouts awaiting a decision · Back office</title>");
    expect(page.html).toContain(`href="/backoffice/operations?q=${PAYOUT_ID}"`);
    // Text from a service is escaped.
    expect(page.html).toContain("payout-&lt;17&gt;");
    expect(page.html).not.toContain("payout-<17>");
    expect(page.html).toContain("1000.00 RUB");
    expect(page.html).toContain("<td>keeper</td>");
    expect(page.html).toContain("refuser");
    expect(page.html).toContain("2026-11-25T21:00:03.000Z");
    // The nav links the page, marked current.
    expect(page.html).toContain('<a href="/backoffice/payouts/operator-queue" aria-current="page">');
  });

  it("says when nothing waits, and the nav links it from the other pages", async () => {
    const { app } = testBackoffice(database, { fakes: queue([]) });
    const { jar } = await login(app);
    const page = await get(app, jar, "/backoffice/payouts/operator-queue");
    expect(page.html).toContain("No payout is waiting for a decision.");
    const other = await get(app, jar, "/backoffice/operations");
    expect(other.html).toContain(
      '<a href="/backoffice/payouts/operator-queue">Payouts awaiting a decision</a>',
    );
  });
});
