CREATE TABLE "matching"."slot_releases" (
	"payin_id" uuid PRIMARY KEY NOT NULL,
	"generation" bigint NOT NULL,
	"released_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "matching"."slots" ADD COLUMN "generation" bigint DEFAULT 0 NOT NULL;