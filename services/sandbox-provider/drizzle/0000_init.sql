CREATE SCHEMA "sandbox";
--> statement-breakpoint
CREATE TABLE "sandbox"."callbacks" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" uuid NOT NULL,
	"operation_id" uuid NOT NULL,
	"url" text NOT NULL,
	"body" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	"abandoned_at" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "callbacks_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "sandbox"."legs" (
	"operation_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"id" uuid NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"completed_at" timestamp with time zone NOT NULL,
	CONSTRAINT "legs_operation_id_position_pk" PRIMARY KEY("operation_id","position"),
	CONSTRAINT "legs_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "sandbox"."operations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"reference" text NOT NULL,
	"direction" text NOT NULL,
	"method" text NOT NULL,
	"amount" numeric(20, 2) NOT NULL,
	"currency" text NOT NULL,
	"number" text,
	"name" text,
	"bankname" text,
	"callback_url" text NOT NULL,
	"decision" text NOT NULL,
	"decline_reason" text,
	"requisites" jsonb,
	"receipt_required" boolean DEFAULT false NOT NULL,
	"expires_at" timestamp with time zone,
	"status" text DEFAULT 'pending' NOT NULL,
	"requests" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone,
	CONSTRAINT "operations_provider_reference" UNIQUE("provider","reference")
);
--> statement-breakpoint
CREATE TABLE "sandbox"."providers" (
	"name" text PRIMARY KEY NOT NULL,
	"credentials" text NOT NULL,
	"payin" jsonb NOT NULL,
	"payout" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sandbox"."callbacks" ADD CONSTRAINT "callbacks_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "sandbox"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sandbox"."legs" ADD CONSTRAINT "legs_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "sandbox"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sandbox"."operations" ADD CONSTRAINT "operations_provider_providers_name_fk" FOREIGN KEY ("provider") REFERENCES "sandbox"."providers"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "callbacks_due" ON "sandbox"."callbacks" USING btree ("next_attempt_at") WHERE delivered_at is null and abandoned_at is null;--> statement-breakpoint
CREATE INDEX "operations_reference" ON "sandbox"."operations" USING btree ("reference");