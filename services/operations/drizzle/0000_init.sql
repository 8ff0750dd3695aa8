CREATE SCHEMA "operations";
--> statement-breakpoint
CREATE TABLE "operations"."callbacks" (
	"provider" text NOT NULL,
	"callback_id" text NOT NULL,
	"operation_id" uuid NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "callbacks_provider_callback_id_pk" PRIMARY KEY("provider","callback_id")
);
--> statement-breakpoint
CREATE TABLE "operations"."inbox" (
	"consumer" text NOT NULL,
	"event_id" uuid NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE TABLE "operations"."legs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"operation_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"provider_leg_id" text NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"completed_at" timestamp with time zone NOT NULL,
	CONSTRAINT "legs_provider_leg" UNIQUE("operation_id","provider_leg_id"),
	CONSTRAINT "legs_positive" CHECK (amount > 0)
);
--> statement-breakpoint
CREATE TABLE "operations"."operations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"shop_id" uuid NOT NULL,
	"merchant_id" uuid NOT NULL,
	"merchant_operation_id" text NOT NULL,
	"request_hash" text,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"method" text,
	"currency" text,
	"expected_amount" numeric(20, 2),
	"actual_amount" numeric(20, 2) DEFAULT '0' NOT NULL,
	"client_id" text,
	"client_ip" text,
	"number" text,
	"name" text,
	"bankname" text,
	"provider" text,
	"receipt_required" boolean DEFAULT false NOT NULL,
	"expires_at" timestamp with time zone,
	"settlement_currency" text,
	"fx_rate" numeric(30, 12),
	"fx_source" text,
	"commission_percent" numeric(9, 4),
	"commission_fixed" numeric(20, 6),
	"manual_check_reason" text,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"cancelled_by_command" boolean DEFAULT false NOT NULL,
	"cancel_reason" text,
	"routing_deadline" timestamp with time zone,
	"version" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "operations_shop_mop" UNIQUE("shop_id","merchant_operation_id"),
	CONSTRAINT "operations_amounts" CHECK (actual_amount >= 0 and (expected_amount is null or expected_amount > 0))
);
--> statement-breakpoint
CREATE TABLE "operations"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" uuid NOT NULL,
	"subject" text NOT NULL,
	"payload" "bytea" NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	CONSTRAINT "outbox_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "operations"."providers" (
	"name" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"base_url" text NOT NULL,
	"credentials" text NOT NULL,
	"methods" text[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operations"."routes" (
	"shop_id" uuid NOT NULL,
	"method" text NOT NULL,
	"payin" text[] NOT NULL,
	"payout" text[] NOT NULL,
	"settlement_currency" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "routes_shop_id_method_pk" PRIMARY KEY("shop_id","method")
);
--> statement-breakpoint
ALTER TABLE "operations"."legs" ADD CONSTRAINT "legs_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "operations"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operations_open" ON "operations"."operations" USING btree ("status","updated_at") WHERE status in ('routing', 'pending', 'awaiting_confirmation');--> statement-breakpoint
CREATE INDEX "outbox_unpublished" ON "operations"."outbox" USING btree ("seq") WHERE published_at is null;