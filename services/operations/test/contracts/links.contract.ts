import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { StateMoveRefusedError } from "../../src/domain/state-machine.ts";
import type { LinkRow, NewLink } from "../../src/repository/links.ts";
import type { CreateStore, OperationStore } from "../../src/repository/store.ts";
import { inserted } from "./store.contract.ts";

const HOUR = 3_600_000;

/** A store with the flexible links: what the contract needs of one. */
export type LinkStore = CreateStore & Pick<OperationStore, "links">;

/** A new link's columns, fresh ids. */
export function newLink(over: Partial<NewLink> = {}): NewLink {
  return {
    operation_id: randomUUID(),
    shop_id: randomUUID(),
    merchant_id: randomUUID(),
    merchant_operation_id: randomUUID(),
    request_hash: "link body",
    client_id: "client",
    client_ip: "10.0.0.1",
    method: "WT_RUB_C2C",
    currency: "RUB",
    recommended_amount: "100",
    min_amount: "50.5",
    max_amount: null,
    picker: "payer",
    k_hash: "k",
    ...over,
  };
}

/** The columns `LinkRow` names (a Postgres row has the claim's bookkeeping too). */
const columns = (row: LinkRow | undefined) =>
  row && {
    operation_id: row.operation_id,
    shop_id: row.shop_id,
    merchant_id: row.merchant_id,
    merchant_operation_id: row.merchant_operation_id,
    request_hash: row.request_hash,
    client_id: row.client_id,
    client_ip: row.client_ip,
    method: row.method,
    currency: row.currency,
    recommended_amount: row.recommended_amount,
    min_amount: row.min_amount,
    max_amount: row.max_amount,
    picker: row.picker,
    k_hash: row.k_hash,
    status: row.status,
    claim: row.claim,
  };

/**
 * What `operations.flexible_links` keeps (`LinkRepository`, `MemoryLinks`): a link written
 * once per id and key, claimed by one attempt at a time for a lease by the store's clock,
 * decided only by the claim's holder and only along the link table, and the reconciler's
 * read of the undecided links whose slot no payment holds. Rows of other tests may share
 * the store: each test looks at its own links only.
 */
export function describeLinks(name: string, make: () => Promise<{ store: LinkStore }>): void {
  describe(`${name}: flexible links`, () => {
    async function written(store: LinkStore, lifetimeMs = HOUR, over: Partial<NewLink> = {}) {
      const link = newLink(over);
      await store.links.insert(link, lifetimeMs);
      return link;
    }

    it("writes a link deciding, once per id and per (shop, merchant_operation_id), and the key it holds", async () => {
      const { store } = await make();
      const link = await written(store);
      const found = await store.links.find(link.operation_id);
      expect(columns(found)).toEqual({
        ...link,
        recommended_amount: "100.00",
        min_amount: "50.50",
        status: "deciding",
        claim: null,
      });
      expect(found?.expires_at).toBeInstanceOf(Date);
      expect(found && found.expires_at.getTime() > Date.now() + HOUR / 2).toBe(true);
      const sameKey = newLink({ shop_id: link.shop_id, merchant_operation_id: link.merchant_operation_id });
      await store.links.insert(sameKey, HOUR);
      await store.links.insert({ ...link, request_hash: "other" }, HOUR);
      expect(await store.links.find(sameKey.operation_id)).toBeUndefined();
      expect((await store.links.find(link.operation_id))?.request_hash).toBe("link body");
      expect(await store.flexibleLinkOf(link.operation_id)).toEqual({ k_hash: "k", status: "deciding" });
      expect(await store.isFlexiblePayment(link.operation_id)).toBe(true);
      const context = await store.createContext(
        link.shop_id,
        link.merchant_operation_id,
        "WT_RUB_C2C",
        "payin",
        1,
      );
      expect(context.linkHoldsKey).toBe(true);
    });

    it("claims a link in the asked status for one attempt while its lease runs; a release or a lapse frees it", async () => {
      const { store } = await make();
      const link = await written(store);
      const id = link.operation_id;
      expect(await store.links.claim(id, "amount_selection", HOUR)).toBeUndefined();
      expect(await store.links.claim(randomUUID(), "deciding", HOUR)).toBeUndefined();
      const first = await store.links.claim(id, "deciding", HOUR);
      expect(first?.claim).toEqual(expect.any(String));
      expect((await store.links.find(id))?.claim).toBe(first?.claim);
      expect(await store.links.claim(id, "deciding", HOUR)).toBeUndefined();
      await store.links.release(id, randomUUID());
      expect(await store.links.claim(id, "deciding", HOUR)).toBeUndefined();
      await store.links.release(id, first?.claim as string);
      expect((await store.links.find(id))?.claim).toBeNull();
      const lapsing = await store.links.claim(id, "deciding", 0);
      expect(lapsing?.claim).not.toBe(first?.claim);
      const taker = await store.links.claim(id, "deciding", HOUR);
      expect(taker?.claim).toEqual(expect.any(String));
      expect(taker?.claim).not.toBe(lapsing?.claim);
      // The lapsed attempt decides nothing, nor ends the taker's claim.
      expect(await store.links.decide(id, lapsing?.claim as string, "rejected")).toBe(false);
      await store.links.release(id, lapsing?.claim as string);
      expect((await store.links.find(id))?.claim).toBe(taker?.claim);
      expect((await store.links.find(id))?.status).toBe("deciding");
    });

    it("records a decision of the claim's holder along the link table and ends the claim; refuses a move the table lacks", async () => {
      const { store } = await make();
      const { operation_id: id } = await written(store);
      const deciding = await store.links.claim(id, "deciding", HOUR);
      await expect(store.links.decide(id, deciding?.claim as string, "deciding")).rejects.toThrow(
        StateMoveRefusedError,
      );
      expect(await store.links.decide(id, deciding?.claim as string, "amount_selection")).toBe(true);
      expect(columns(await store.links.find(id))).toMatchObject({ status: "amount_selection", claim: null });
      expect(await store.flexibleLinkOf(id)).toEqual({ k_hash: "k", status: "amount_selection" });
      expect(await store.links.decide(id, deciding?.claim as string, "created")).toBe(false);
      const selecting = await store.links.claim(id, "amount_selection", HOUR);
      expect(await store.links.decide(id, selecting?.claim as string, "created")).toBe(true);
      const created = await store.links.claim(id, "created", HOUR);
      await expect(store.links.decide(id, created?.claim as string, "rejected")).rejects.toThrow(
        StateMoveRefusedError,
      );
      expect(columns(await store.links.find(id))).toMatchObject({ status: "created", claim: created?.claim });
      // In a caller's transaction: kept with it, dropped with it.
      await store.links.release(id, created?.claim as string);
      const other = await written(store);
      const c = await store.links.claim(other.operation_id, "deciding", HOUR);
      const failure = new Error("after the decision");
      await expect(
        store.transaction(async (tx) => {
          expect(await store.links.decide(other.operation_id, c?.claim as string, "rejected", tx)).toBe(true);
          expect((await store.links.find(other.operation_id, tx))?.status).toBe("rejected");
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect((await store.links.find(other.operation_id))?.status).toBe("deciding");
      await store.transaction((tx) =>
        store.links.decide(other.operation_id, c?.claim as string, "rejected", tx),
      );
      expect((await store.links.find(other.operation_id))?.status).toBe("rejected");
    });

    it("lists undecided links past their expiry (or deciding for stuckMs) with no payment holding their slot, soonest expiry first", async () => {
      const { store } = await make();
      const later = await written(store, -1_000);
      const sooner = await written(store, -60_000);
      const stuck = await written(store, HOUR);
      const selecting = await written(store, HOUR);
      const c = await store.links.claim(selecting.operation_id, "deciding", HOUR);
      await store.links.decide(selecting.operation_id, c?.claim as string, "amount_selection");
      const decided = await written(store, -1_000);
      const d = await store.links.claim(decided.operation_id, "deciding", HOUR);
      await store.links.decide(decided.operation_id, d?.claim as string, "rejected");
      const paid = await written(store, -1_000);
      await inserted(store, { id: paid.operation_id, status: "pending", provider: "a" });
      const refused = await written(store, -1_000);
      await inserted(store, { id: refused.operation_id, status: "rejected" });
      const pooled = await written(store, -1_000);
      await inserted(store, { id: pooled.operation_id, status: "rejected", provider: "self_matching" });
      const cancelled = await written(store, -1_000);
      await inserted(store, { id: cancelled.operation_id, status: "cancelled", provider: "a" });
      const all = [later, sooner, stuck, selecting, decided, paid, refused, pooled, cancelled].map(
        (l) => l.operation_id,
      );
      const listed = async (stuckMs: number) =>
        (await store.links.undecidedWithoutPayment(stuckMs, 10_000))
          .map((l) => l.operation_id)
          .filter((id) => all.includes(id));
      const byHour = await listed(HOUR);
      expect(byHour.slice(0, 1)).toEqual([sooner.operation_id]);
      expect(new Set(byHour)).toEqual(
        new Set([sooner, later, refused, cancelled].map((l) => l.operation_id)),
      );
      expect(new Set(await listed(0))).toEqual(
        new Set([sooner, later, refused, cancelled, stuck].map((l) => l.operation_id)),
      );
      expect((await store.links.undecidedWithoutPayment(0, 1)).length).toBe(1);
    });

    it("leaves out a claimed link, and one whose slot was released since its last claim", async () => {
      const { store } = await make();
      const link = await written(store, -1_000);
      const id = link.operation_id;
      const mine = async () =>
        (await store.links.undecidedWithoutPayment(HOUR, 10_000)).some((l) => l.operation_id === id);
      expect(await mine()).toBe(true);
      const held = await store.links.claim(id, "deciding", HOUR);
      expect(await mine()).toBe(false);
      await store.links.slotReleased(id, randomUUID());
      expect((await store.links.find(id))?.claim).toBe(held?.claim);
      await store.links.slotReleased(id, held?.claim as string);
      expect((await store.links.find(id))?.claim).toBeNull();
      expect(await mine()).toBe(false);
      // A new claim may admit again: its slot counts again once the claim is over.
      const again = await store.links.claim(id, "deciding", 0);
      expect(await mine()).toBe(true);
      await store.links.release(id, again?.claim as string);
      expect(await mine()).toBe(true);
    });
  });
}
