CREATE TABLE "matching"."contributions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"payout_id" uuid NOT NULL,
	"payin_id" uuid NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"completed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contributions_payin_id_unique" UNIQUE("payin_id"),
	CONSTRAINT "contributions_amount_positive" CHECK ("matching"."contributions"."amount" > 0)
);
--> statement-breakpoint
CREATE TABLE "matching"."slots" (
	"payin_id" uuid PRIMARY KEY NOT NULL,
	"payout_id" uuid NOT NULL,
	"shop_id" uuid NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"status" text DEFAULT 'reserved' NOT NULL,
	"release_reason" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone,
	CONSTRAINT "slots_amount_positive" CHECK ("matching"."slots"."amount" > 0),
	CONSTRAINT "slots_status" CHECK ("matching"."slots"."status" in ('reserved', 'confirmed', 'released')),
	CONSTRAINT "slots_release_reason" CHECK (("matching"."slots"."status" = 'released') = ("matching"."slots"."release_reason" is not null) and ("matching"."slots"."release_reason" is null or "matching"."slots"."release_reason" in ('expired', 'rejected', 'cancelled')))
);
--> statement-breakpoint
DROP INDEX "matching"."pool_payouts_free";--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "reserved_amount" numeric(20, 2) DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "paid_amount" numeric(20, 2) DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "handed_off_amount" numeric(20, 2) DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "number" text NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "name" text NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "bankname" text;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "window_ends_at" timestamp with time zone NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "status" text DEFAULT 'open' NOT NULL;--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD COLUMN "closed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "matching"."contributions" ADD CONSTRAINT "contributions_payout_id_pool_payouts_operation_id_fk" FOREIGN KEY ("payout_id") REFERENCES "matching"."pool_payouts"("operation_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "matching"."contributions" ADD CONSTRAINT "contributions_payin_id_slots_payin_id_fk" FOREIGN KEY ("payin_id") REFERENCES "matching"."slots"("payin_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "matching"."slots" ADD CONSTRAINT "slots_payout_id_pool_payouts_operation_id_fk" FOREIGN KEY ("payout_id") REFERENCES "matching"."pool_payouts"("operation_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "contributions_payout" ON "matching"."contributions" USING btree ("payout_id","completed_at","id");--> statement-breakpoint
CREATE INDEX "slots_payout" ON "matching"."slots" USING btree ("payout_id");--> statement-breakpoint
CREATE INDEX "slots_expiry" ON "matching"."slots" USING btree ("expires_at") WHERE status = 'reserved';--> statement-breakpoint
CREATE INDEX "pool_payouts_matching_order" ON "matching"."pool_payouts" USING btree ("method","currency","free_amount","created_at","operation_id") WHERE status = 'open';--> statement-breakpoint
CREATE INDEX "pool_payouts_window" ON "matching"."pool_payouts" USING btree ("window_ends_at") WHERE status = 'open';--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD CONSTRAINT "pool_payouts_amount_positive" CHECK ("matching"."pool_payouts"."amount" > 0);--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD CONSTRAINT "pool_payouts_parts_non_negative" CHECK ("matching"."pool_payouts"."free_amount" >= 0 and "matching"."pool_payouts"."reserved_amount" >= 0 and "matching"."pool_payouts"."paid_amount" >= 0 and "matching"."pool_payouts"."handed_off_amount" >= 0);--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD CONSTRAINT "pool_payouts_parts_add_up" CHECK ("matching"."pool_payouts"."free_amount" + "matching"."pool_payouts"."reserved_amount" + "matching"."pool_payouts"."paid_amount" + "matching"."pool_payouts"."handed_off_amount" = "matching"."pool_payouts"."amount");--> statement-breakpoint
ALTER TABLE "matching"."pool_payouts" ADD CONSTRAINT "pool_payouts_status" CHECK ("matching"."pool_payouts"."status" in ('open', 'completed', 'handed_off'));