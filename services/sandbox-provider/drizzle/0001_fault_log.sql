CREATE TABLE "sandbox"."fault_log" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"direction" text NOT NULL,
	"reference" text NOT NULL,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "fault_log_provider" ON "sandbox"."fault_log" USING btree ("provider");