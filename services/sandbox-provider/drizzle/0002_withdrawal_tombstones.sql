ALTER TABLE "sandbox"."operations" ALTER COLUMN "method" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sandbox"."operations" ALTER COLUMN "amount" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sandbox"."operations" ALTER COLUMN "currency" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sandbox"."operations" ALTER COLUMN "callback_url" DROP NOT NULL;