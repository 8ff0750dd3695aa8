CREATE TABLE "operations"."shop_pages" (
	"shop_id" uuid PRIMARY KEY NOT NULL,
	"display_name" text,
	"return_url" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "operations_mop" ON "operations"."operations" USING btree ("merchant_operation_id");