CREATE SCHEMA "alpha";
--> statement-breakpoint
CREATE TABLE "alpha"."applied_migrations" ("tag" text NOT NULL, "at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL);
--> statement-breakpoint
INSERT INTO "alpha"."applied_migrations" ("tag") VALUES ('0000_init');
