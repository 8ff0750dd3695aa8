CREATE SCHEMA "webhooks";
--> statement-breakpoint
CREATE TABLE "webhooks"."deliveries" (
	"event_id" uuid PRIMARY KEY NOT NULL,
	"shop_id" uuid NOT NULL,
	"operation_id" uuid NOT NULL,
	"operation_version" bigint NOT NULL,
	"event_type" text NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"payload" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"retry_step" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"last_attempt_at" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhooks"."endpoints" (
	"shop_id" uuid PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhooks"."inbox" (
	"consumer" text NOT NULL,
	"event_id" uuid NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE INDEX "deliveries_due" ON "webhooks"."deliveries" USING btree ("next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "deliveries_pending_by_operation" ON "webhooks"."deliveries" USING btree ("operation_id","operation_version") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "deliveries_by_shop" ON "webhooks"."deliveries" USING btree ("shop_id","created_at");