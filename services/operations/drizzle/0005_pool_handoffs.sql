CREATE TABLE "operations"."pool_handoffs" (
	"operation_id" uuid PRIMARY KEY NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"candidates" text[] NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'asking' NOT NULL,
	"provider" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "pool_handoffs_due" ON "operations"."pool_handoffs" USING btree ("next_attempt_at") WHERE status = 'asking';