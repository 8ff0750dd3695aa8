CREATE TABLE "matching"."payin_generations" (
	"payin_id" uuid PRIMARY KEY NOT NULL,
	"admitted" bigint DEFAULT 0 NOT NULL,
	"released" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "matching"."slots" ADD COLUMN "generation" bigint DEFAULT 0 NOT NULL;