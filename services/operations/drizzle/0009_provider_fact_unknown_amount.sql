ALTER TABLE "operations"."provider_facts" DROP CONSTRAINT "provider_facts_amount";--> statement-breakpoint
ALTER TABLE "operations"."provider_facts" ALTER COLUMN "amount" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "operations"."provider_facts" ALTER COLUMN "currency" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "operations"."provider_facts" ADD CONSTRAINT "provider_facts_amount" CHECK (amount is null or amount > 0);