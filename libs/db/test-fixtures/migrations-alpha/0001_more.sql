CREATE TABLE "alpha"."things" ("id" bigserial PRIMARY KEY NOT NULL);
--> statement-breakpoint
SELECT pg_sleep(0.2);
--> statement-breakpoint
INSERT INTO "alpha"."applied_migrations" ("tag") VALUES ('0001_more');
