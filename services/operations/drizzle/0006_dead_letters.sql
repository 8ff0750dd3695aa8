CREATE TABLE "operations"."dead_letters" (
	"consumer" text NOT NULL,
	"event_id" uuid NOT NULL,
	"subject" text NOT NULL,
	"payload" "bytea" NOT NULL,
	"attempts" integer NOT NULL,
	"error" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"first_failed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_failed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	"resolved_by" text,
	"resolution_reason" text,
	CONSTRAINT "dead_letters_consumer_event_id_pk" PRIMARY KEY("consumer","event_id"),
	CONSTRAINT "dead_letters_status" CHECK ("operations"."dead_letters"."status" in ('open', 'retried', 'discarded'))
);
--> statement-breakpoint
CREATE INDEX "dead_letters_last_failed" ON "operations"."dead_letters" USING btree ("last_failed_at");