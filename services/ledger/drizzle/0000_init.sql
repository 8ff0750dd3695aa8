CREATE SCHEMA "ledger";
--> statement-breakpoint
CREATE TABLE "ledger"."accounts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"owner" text NOT NULL,
	"currency" text NOT NULL,
	"kind" text NOT NULL,
	"balance" numeric DEFAULT '0' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_owner_currency_kind" UNIQUE("owner","currency","kind"),
	CONSTRAINT "accounts_id_currency" UNIQUE("id","currency"),
	CONSTRAINT "accounts_kind" CHECK ("ledger"."accounts"."kind" in ('available', 'reserved', 'commission_revenue', 'provider_clearing', 'fx_conversion', 'adjustments'))
);
--> statement-breakpoint
CREATE TABLE "ledger"."fx_rates" (
	"from_currency" text NOT NULL,
	"to_currency" text NOT NULL,
	"rate" numeric NOT NULL,
	"source" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "fx_rates_from_currency_to_currency_pk" PRIMARY KEY("from_currency","to_currency"),
	CONSTRAINT "fx_rates_positive" CHECK ("ledger"."fx_rates"."rate" > 0)
);
--> statement-breakpoint
CREATE TABLE "ledger"."inbox" (
	"consumer" text NOT NULL,
	"event_id" uuid NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE TABLE "ledger"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" uuid NOT NULL,
	"subject" text NOT NULL,
	"payload" "bytea" NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	CONSTRAINT "outbox_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "ledger"."payout_reserves" (
	"operation_id" uuid PRIMARY KEY NOT NULL,
	"shop_id" text NOT NULL,
	"state" text DEFAULT 'none' NOT NULL,
	"currency" text,
	"amount" numeric,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payout_reserves_state" CHECK ("ledger"."payout_reserves"."state" in ('none', 'reserved', 'consumed', 'released'))
);
--> statement-breakpoint
CREATE TABLE "ledger"."postings" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"transfer_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"currency" text NOT NULL,
	"side" text NOT NULL,
	"amount" numeric NOT NULL,
	CONSTRAINT "postings_side" CHECK ("ledger"."postings"."side" in ('debit', 'credit')),
	CONSTRAINT "postings_amount_positive" CHECK ("ledger"."postings"."amount" > 0)
);
--> statement-breakpoint
CREATE TABLE "ledger"."pricing_tiers" (
	"shop_id" text NOT NULL,
	"method" text NOT NULL,
	"direction" text NOT NULL,
	"min_amount" numeric NOT NULL,
	"max_amount" numeric NOT NULL,
	"percent" numeric NOT NULL,
	"fixed" numeric NOT NULL,
	CONSTRAINT "pricing_tiers_shop_id_method_direction_min_amount_pk" PRIMARY KEY("shop_id","method","direction","min_amount"),
	CONSTRAINT "pricing_tiers_direction" CHECK ("ledger"."pricing_tiers"."direction" in ('payin', 'payout')),
	CONSTRAINT "pricing_tiers_range" CHECK ("ledger"."pricing_tiers"."min_amount" <= "ledger"."pricing_tiers"."max_amount")
);
--> statement-breakpoint
CREATE TABLE "ledger"."transfers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"kind" text NOT NULL,
	"shop_id" text NOT NULL,
	"operation_id" uuid,
	"request_hash" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "transfers_key_unique" UNIQUE("key")
);
--> statement-breakpoint
ALTER TABLE "ledger"."postings" ADD CONSTRAINT "postings_transfer_id_transfers_id_fk" FOREIGN KEY ("transfer_id") REFERENCES "ledger"."transfers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger"."postings" ADD CONSTRAINT "postings_account_currency" FOREIGN KEY ("account_id","currency") REFERENCES "ledger"."accounts"("id","currency") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "outbox_unpublished" ON "ledger"."outbox" USING btree ("seq") WHERE published_at is null;--> statement-breakpoint
CREATE INDEX "postings_account" ON "ledger"."postings" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "postings_transfer" ON "ledger"."postings" USING btree ("transfer_id");--> statement-breakpoint
CREATE INDEX "transfers_operation" ON "ledger"."transfers" USING btree ("operation_id");