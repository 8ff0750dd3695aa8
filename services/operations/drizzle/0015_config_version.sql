CREATE TABLE "operations"."config_version" (
	"one" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "config_version_one_row" CHECK ("operations"."config_version"."one")
);
--> statement-breakpoint
INSERT INTO "operations"."config_version" ("one", "version") VALUES (true, 0);--> statement-breakpoint
-- Every write to the routing configuration, by any writer (the admin API, a migration, SQL
-- by hand), raises the version in its own transaction: a create claims by a cached
-- configuration only while the version it was read at is current (OperationStore.claim).
CREATE FUNCTION "operations"."raise_config_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "operations"."config_version" SET "version" = "version" + 1;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "routes_raise_config_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "operations"."routes"
  FOR EACH STATEMENT EXECUTE FUNCTION "operations"."raise_config_version"();--> statement-breakpoint
CREATE TRIGGER "providers_raise_config_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "operations"."providers"
  FOR EACH STATEMENT EXECUTE FUNCTION "operations"."raise_config_version"();
