-- Every transfer balances per currency: debits equal credits. Checked at commit (deferred),
-- after all postings of the transfer are in, whatever code wrote them.
CREATE FUNCTION "ledger"."check_transfer_balanced"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad text;
BEGIN
  SELECT p.currency INTO bad
  FROM "ledger"."postings" p
  WHERE p.transfer_id = NEW.transfer_id
  GROUP BY p.currency
  HAVING sum(CASE WHEN p.side = 'credit' THEN p.amount ELSE -p.amount END) <> 0
  LIMIT 1;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'transfer % does not balance in %', NEW.transfer_id, bad USING ERRCODE = '23514';
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "postings_balanced" AFTER INSERT ON "ledger"."postings"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "ledger"."check_transfer_balanced"();
--> statement-breakpoint
-- Postings are facts: they are never changed or removed; a correction is a new transfer.
CREATE FUNCTION "ledger"."refuse_posting_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'postings are append-only' USING ERRCODE = '42501';
END $$;
--> statement-breakpoint
CREATE TRIGGER "postings_append_only" BEFORE UPDATE OR DELETE ON "ledger"."postings"
  FOR EACH ROW EXECUTE FUNCTION "ledger"."refuse_posting_change"();
