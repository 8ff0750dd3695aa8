ALTER TABLE "operations"."withdrawals" DROP CONSTRAINT "withdrawals_pkey";--> statement-breakpoint
ALTER TABLE "operations"."withdrawals" ADD CONSTRAINT "withdrawals_operation_id_provider_pk" PRIMARY KEY("operation_id","provider");--> statement-breakpoint
ALTER TABLE "operations"."withdrawals" ADD COLUMN "passed_over" boolean DEFAULT false NOT NULL;
