CREATE TABLE "operations"."provider_facts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"reference" text NOT NULL,
	"fact_key" text NOT NULL,
	"operation_id" uuid,
	"shop_id" uuid,
	"merchant_id" uuid,
	"kind" text NOT NULL,
	"provider_status" text NOT NULL,
	"direction" text NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"currency" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"resolution" text,
	"resolved_by" text,
	"resolution_reason" text,
	"settlement_amount" numeric(20, 6),
	"commission_amount" numeric(20, 6),
	"settlement_currency" text,
	"resolved_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "provider_facts_source" UNIQUE("provider","reference","fact_key"),
	CONSTRAINT "provider_facts_amount" CHECK (amount > 0)
);
--> statement-breakpoint
CREATE TABLE "operations"."withdrawals" (
	"operation_id" uuid PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"status" text DEFAULT 'asking' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "provider_facts_open" ON "operations"."provider_facts" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "withdrawals_due" ON "operations"."withdrawals" USING btree ("next_attempt_at") WHERE status = 'asking';