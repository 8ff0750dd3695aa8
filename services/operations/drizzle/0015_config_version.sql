CREATE TABLE "operations"."config_version" (
	"one" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "config_version_one_row" CHECK ("operations"."config_version"."one")
);
--> statement-breakpoint
INSERT INTO "operations"."config_version" ("one", "version") VALUES (true, 0);--> statement-breakpoint
-- Every write to the routing configuration, by any writer (the admin API, a migration, SQL
-- by hand, a replica applying changes), raises the version in its own transaction: a create
-- claims by a cached configuration only while the version it was read at is current
-- (OperationStore.claim). BEFORE, so every writer takes the version row's lock first and two
-- writers never wait on each other the other way round. A row deleted by hand comes back at
-- the next write, numbered by the clock so that no version cached before can match it (until
-- then every claim finds its version gone and creates take the read path).
CREATE FUNCTION "operations"."raise_config_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "operations"."config_version" ("one", "version")
    VALUES (true, (extract(epoch from clock_timestamp()) * 1000000)::bigint)
    ON CONFLICT ("one") DO UPDATE SET "version" = "operations"."config_version"."version" + 1;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "routes_raise_config_version" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "operations"."routes"
  FOR EACH STATEMENT EXECUTE FUNCTION "operations"."raise_config_version"();--> statement-breakpoint
ALTER TABLE "operations"."routes" ENABLE ALWAYS TRIGGER "routes_raise_config_version";--> statement-breakpoint
CREATE TRIGGER "providers_raise_config_version" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "operations"."providers"
  FOR EACH STATEMENT EXECUTE FUNCTION "operations"."raise_config_version"();--> statement-breakpoint
ALTER TABLE "operations"."providers" ENABLE ALWAYS TRIGGER "providers_raise_config_version";
