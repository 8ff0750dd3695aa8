CREATE SCHEMA "edge";
--> statement-breakpoint
CREATE TABLE "edge"."api_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"shop_id" uuid NOT NULL,
	"key_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "edge"."merchants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "edge"."shop_settings" (
	"shop_id" uuid PRIMARY KEY NOT NULL,
	"hosted_page_enabled" boolean DEFAULT false NOT NULL,
	"flexible_link_enabled" boolean DEFAULT false NOT NULL,
	"flexible_picker" text DEFAULT 'amount' NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "edge"."shops" (
	"id" uuid PRIMARY KEY NOT NULL,
	"merchant_id" uuid NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "edge"."api_keys" ADD CONSTRAINT "api_keys_shop_id_shops_id_fk" FOREIGN KEY ("shop_id") REFERENCES "edge"."shops"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "edge"."shop_settings" ADD CONSTRAINT "shop_settings_shop_id_shops_id_fk" FOREIGN KEY ("shop_id") REFERENCES "edge"."shops"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "edge"."shops" ADD CONSTRAINT "shops_merchant_id_merchants_id_fk" FOREIGN KEY ("merchant_id") REFERENCES "edge"."merchants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash" ON "edge"."api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_shop" ON "edge"."api_keys" USING btree ("shop_id");--> statement-breakpoint
CREATE INDEX "shops_merchant" ON "edge"."shops" USING btree ("merchant_id");