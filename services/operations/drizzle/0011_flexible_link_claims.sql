ALTER TABLE "operations"."flexible_links" ADD COLUMN "claim" uuid;--> statement-breakpoint
ALTER TABLE "operations"."flexible_links" ADD COLUMN "claimed_until" timestamp with time zone;