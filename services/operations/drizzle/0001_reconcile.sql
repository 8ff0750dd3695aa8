ALTER TABLE "operations"."operations" ADD COLUMN "next_check_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "operations"."operations" ADD COLUMN "reconcile_checks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "operations"."operations" ADD COLUMN "stuck_alerted_at" timestamp with time zone;