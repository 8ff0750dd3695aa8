CREATE TABLE "ledger"."pricing_version" (
	"id" smallint PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL,
	CONSTRAINT "pricing_version_one_row" CHECK ("ledger"."pricing_version"."id" = 1)
);
