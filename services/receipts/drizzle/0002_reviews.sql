CREATE TABLE "receipts"."receipt_blobs" (
	"sha256" text PRIMARY KEY NOT NULL,
	"size_bytes" bigint NOT NULL,
	"bytes" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipts"."receipt_resolutions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"review_id" uuid NOT NULL,
	"operation_id" uuid NOT NULL,
	"decision" text NOT NULL,
	"amount" numeric,
	"operator" text NOT NULL,
	"reason" text NOT NULL,
	"previous_status" text NOT NULL,
	"previous_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipts"."receipt_reviews" (
	"id" uuid PRIMARY KEY NOT NULL,
	"operation_id" uuid NOT NULL,
	"shop_id" uuid NOT NULL,
	"sha256" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"content_type" text NOT NULL,
	"file_name" text,
	"status" text NOT NULL,
	"manual_check_reason" text,
	"actual_amount" numeric,
	"currency" text NOT NULL,
	"layout" text,
	"transaction_id" text,
	"findings" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"extraction" jsonb,
	"expected" jsonb NOT NULL,
	"review_deadline" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"reviewed_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "receipts"."receipt_resolutions" ADD CONSTRAINT "receipt_resolutions_review_id_receipt_reviews_id_fk" FOREIGN KEY ("review_id") REFERENCES "receipts"."receipt_reviews"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "receipt_resolutions_review" ON "receipts"."receipt_resolutions" USING btree ("review_id");--> statement-breakpoint
CREATE INDEX "receipt_reviews_operation" ON "receipts"."receipt_reviews" USING btree ("operation_id","created_at");--> statement-breakpoint
CREATE INDEX "receipt_reviews_sha256" ON "receipts"."receipt_reviews" USING btree ("sha256");--> statement-breakpoint
CREATE INDEX "receipt_reviews_transaction" ON "receipts"."receipt_reviews" USING btree ("transaction_id") WHERE transaction_id is not null;