import { boolean, index, pgSchema, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";

/** The edge owns this schema; no other service reads or writes it. */
export const edge = pgSchema("edge");

/** A merchant: the legal party that owns one or more shops. */
export const merchants = edge.table("merchants", {
  id: uuid("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** A shop: the scope every `/v1` request acts in, resolved from its API key. */
export const shops = edge.table(
  "shops",
  {
    id: uuid("id").primaryKey(),
    merchantId: uuid("merchant_id")
      .notNull()
      .references(() => merchants.id),
    name: text("name").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("shops_merchant").on(t.merchantId)],
);

/**
 * API keys of a shop. Only the sha256 of the key is stored (hex); the plaintext exists
 * once, in the response that issued it. `prefix` is the non-secret head shown in lists.
 * Every `/v1` request looks its key up by `key_hash` through the unique index, so a
 * revocation is seen by the very next request on every replica.
 */
export const apiKeys = edge.table(
  "api_keys",
  {
    id: uuid("id").primaryKey(),
    shopId: uuid("shop_id")
      .notNull()
      .references(() => shops.id),
    keyHash: text("key_hash").notNull(),
    prefix: text("prefix").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    /**
     * A restricted key: the optional endpoint groups it may call (`availability`,
     * `flexible_links`); any other of them answers 403. Null: all of them. Every key may
     * call the other `/v1` endpoints of its shop.
     */
    permissions: text("permissions").array(),
  },
  (t) => [uniqueIndex("api_keys_hash").on(t.keyHash), index("api_keys_shop").on(t.shopId)],
);

/** Per-shop switches the edge applies itself; the webhook URL lives with the webhooks service. */
export const shopSettings = edge.table("shop_settings", {
  shopId: uuid("shop_id")
    .primaryKey()
    .references(() => shops.id),
  hostedPageEnabled: boolean("hosted_page_enabled").notNull().default(false),
  flexibleLinkEnabled: boolean("flexible_link_enabled").notNull().default(false),
  /** How the hosted page offers amounts on a flexible link: one amount field or a list of ranges. */
  flexiblePicker: text("flexible_picker").notNull().default("amount"),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});
