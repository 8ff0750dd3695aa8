CREATE SCHEMA "beta";
--> statement-breakpoint
CREATE TABLE "beta"."applied_migrations" ("tag" text NOT NULL, "at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL);
--> statement-breakpoint
INSERT INTO "beta"."applied_migrations" ("tag") VALUES ('0000_init');
