import type { Database } from "@gw/db";
import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { v7 as uuidv7 } from "uuid";
import { apiKeys, merchants, shopSettings, shops } from "./db/schema.ts";
import type { Scope } from "./env.ts";
import type { KeyCache } from "./key-cache.ts";
import { issueApiKey } from "./keys.ts";

/** The switches of a shop the edge applies itself, with their defaults for a shop never configured. */
export interface ShopSettings {
  hostedPageEnabled: boolean;
  flexibleLinkEnabled: boolean;
  flexiblePicker: string;
}

export const DEFAULT_SHOP_SETTINGS: ShopSettings = {
  hostedPageEnabled: false,
  flexibleLinkEnabled: false,
  flexiblePicker: "amount",
};

/** A key as lists show it: never the secret, never the hash. */
export interface ApiKeyListing {
  id: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
  /** The optional endpoint groups a restricted key may call; null: all of them. */
  permissions: string[] | null;
}

/** True for text Postgres accepts as a uuid; other ids cannot exist, so callers answer 404 early. */
export const isUuid = (text: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);

/** The edge's own data in its `edge` schema: merchants, shops, key hashes and shop settings. */
export class EdgeStore {
  readonly #db: Database;
  /** The key lookup runs on every request: built once, so a request pays only its round trip. */
  readonly #scopeOfKey;
  readonly #keyCache: KeyCache | undefined;

  /** `keyCache`: the replica's cache of live keys (`startEdge`); without it every lookup reads Postgres. */
  constructor(db: Database, keyCache?: KeyCache) {
    this.#db = db;
    this.#keyCache = keyCache;
    this.#scopeOfKey = db
      .select({
        keyId: apiKeys.id,
        shopId: shops.id,
        merchantId: shops.merchantId,
        permissions: apiKeys.permissions,
      })
      .from(apiKeys)
      .innerJoin(shops, eq(shops.id, apiKeys.shopId))
      .where(and(eq(apiKeys.keyHash, sql.placeholder("keyHash")), isNull(apiKeys.revokedAt)))
      .limit(1)
      .prepare("edge_scope_of_key");
  }

  /**
   * The scope of a live key, or undefined for an unknown or revoked one: one query over
   * the unique index on the hash, or the replica's `KeyCache`, whose invalidation makes a
   * revocation hold from the very next request on every replica.
   */
  async scopeOfKey(keyHash: string): Promise<Scope | undefined> {
    const load = async (): Promise<Scope | undefined> => (await this.#scopeOfKey.execute({ keyHash }))[0];
    return this.#keyCache === undefined ? load() : this.#keyCache.scopeOf(keyHash, load);
  }

  async createMerchant(name: string): Promise<string> {
    const id = uuidv7();
    await this.#db.insert(merchants).values({ id, name });
    return id;
  }

  /** Creates a shop of an existing merchant; undefined when the merchant does not exist. */
  async createShop(merchantId: string, name: string): Promise<string | undefined> {
    if (!isUuid(merchantId)) return undefined;
    const id = uuidv7();
    const rows = await this.#db.execute<{ id: string }>(sql`
      insert into ${shops} (id, merchant_id, name)
      select ${id}, ${merchants.id}, ${name} from ${merchants} where ${merchants.id} = ${merchantId}
      returning id`);
    return rows[0]?.id;
  }

  async shopExists(shopId: string): Promise<boolean> {
    if (!isUuid(shopId)) return false;
    const rows = await this.#db.select({ id: shops.id }).from(shops).where(eq(shops.id, shopId)).limit(1);
    return rows.length > 0;
  }

  /**
   * Issues a key for a shop and stores only its hash; the plaintext is returned once.
   * `permissions` restricts it to those optional endpoint groups (undefined: all of them).
   */
  async issueKey(
    shopId: string,
    permissions?: string[],
  ): Promise<{
    keyId: string;
    plaintext: string;
    prefix: string;
    createdAt: Date;
    permissions: string[] | null;
  }> {
    const key = issueApiKey();
    const id = uuidv7();
    const [row] = await this.#db
      .insert(apiKeys)
      .values({ id, shopId, keyHash: key.hash, prefix: key.displayPrefix, permissions: permissions ?? null })
      .returning({ createdAt: apiKeys.createdAt, permissions: apiKeys.permissions });
    return {
      keyId: id,
      plaintext: key.plaintext,
      prefix: key.displayPrefix,
      createdAt: row!.createdAt,
      permissions: row!.permissions,
    };
  }

  async listKeys(shopId: string): Promise<ApiKeyListing[]> {
    return this.#db
      .select({
        id: apiKeys.id,
        prefix: apiKeys.prefix,
        createdAt: apiKeys.createdAt,
        revokedAt: apiKeys.revokedAt,
        permissions: apiKeys.permissions,
      })
      .from(apiKeys)
      .where(eq(apiKeys.shopId, shopId))
      .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
  }

  /**
   * Revokes a key; revoking it again keeps the first revocation time. Undefined when the
   * key does not exist.
   */
  async revokeKey(keyId: string): Promise<ApiKeyListing | undefined> {
    if (!isUuid(keyId)) return undefined;
    const rows = await this.#db
      .update(apiKeys)
      .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
      .where(eq(apiKeys.id, keyId))
      .returning({
        id: apiKeys.id,
        prefix: apiKeys.prefix,
        createdAt: apiKeys.createdAt,
        revokedAt: apiKeys.revokedAt,
        permissions: apiKeys.permissions,
      });
    // After the commit, before the answer: every replica's cache forgets its keys.
    if (rows[0] !== undefined) await this.#keyCache?.invalidateAll();
    return rows[0];
  }

  async settings(shopId: string): Promise<ShopSettings> {
    const rows = await this.#db
      .select({
        hostedPageEnabled: shopSettings.hostedPageEnabled,
        flexibleLinkEnabled: shopSettings.flexibleLinkEnabled,
        flexiblePicker: shopSettings.flexiblePicker,
      })
      .from(shopSettings)
      .where(eq(shopSettings.shopId, shopId))
      .limit(1);
    return rows[0] ?? DEFAULT_SHOP_SETTINGS;
  }

  /** Sets the given switches of a shop, keeping the others, and returns the result. */
  async putSettings(shopId: string, patch: Partial<ShopSettings>): Promise<ShopSettings> {
    const values = { ...DEFAULT_SHOP_SETTINGS, ...patch };
    const [row] = await this.#db
      .insert(shopSettings)
      .values({ shopId, ...values })
      .onConflictDoUpdate({ target: shopSettings.shopId, set: { ...patch, updatedAt: sql`now()` } })
      .returning({
        hostedPageEnabled: shopSettings.hostedPageEnabled,
        flexibleLinkEnabled: shopSettings.flexibleLinkEnabled,
        flexiblePicker: shopSettings.flexiblePicker,
      });
    return row!;
  }
}
