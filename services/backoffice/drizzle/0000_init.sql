CREATE SCHEMA "backoffice";
--> statement-breakpoint
CREATE TABLE "backoffice"."sessions" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"revoked_by" text
);
--> statement-breakpoint
CREATE INDEX "sessions_expires" ON "backoffice"."sessions" USING btree ("expires_at");