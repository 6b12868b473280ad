-- The delta of one partition of users: the emails added since the last seal, sealed now and then
-- into a filter batch that the coordinator merges into its filter exactly once. Installed on each
-- data node and, for its own partition, on the coordinator.
-- psql variables: users_table (the table whose emails are followed), capacity, error_rate (those
-- of the coordinator's filter: only filters of the same parameters can be unioned).

CREATE TABLE filter_params (
  single boolean PRIMARY KEY DEFAULT true CHECK (single),  -- one row
  capacity bigint NOT NULL,
  error_rate float8 NOT NULL
);
INSERT INTO filter_params (capacity, error_rate) VALUES (:capacity, :error_rate);

-- A signup appends its email here, in its own transaction (by trigger). It does not rewrite a
-- filter value: no whole-filter write per signup, no hot row that serialises signups, and no
-- update for a seal or for a signup arriving through postgres_fdw (repeatable read) to conflict with.
CREATE TABLE filter_pending (email text NOT NULL);

-- Sealed deltas waiting for the coordinator, which reads them, merges them, and deletes them.
CREATE TABLE filter_outbox (batch bigint PRIMARY KEY, emails bigint NOT NULL, f bloom NOT NULL);
-- CACHE 1 (the default): sessions get the sequence's values in the order they ask for them.
CREATE SEQUENCE filter_outbox_batch CACHE 1;

-- SET search_path: rows inserted through postgres_fdw arrive in a session whose search_path is
-- pg_catalog only, and the trigger must still find filter_pending.
CREATE FUNCTION filter_pending_add() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO filter_pending VALUES (NEW.email);
  RETURN NULL;
END $$;
CREATE TRIGGER filter_pending_insert AFTER INSERT ON :users_table
  FOR EACH ROW EXECUTE FUNCTION filter_pending_add();
CREATE TRIGGER filter_pending_update AFTER UPDATE OF email ON :users_table
  FOR EACH ROW WHEN (OLD.email IS DISTINCT FROM NEW.email) EXECUTE FUNCTION filter_pending_add();

-- Moves the pending emails into a new outbox batch; returns its number, NULL when none were
-- pending. Run it on the node itself, in its own transaction (read committed), e.g. from cron.
CREATE FUNCTION filter_delta_seal() RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  sealed bigint;
BEGIN
  IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'filter_delta_seal() runs in a read committed transaction on the node, not in %',
      pg_catalog.current_setting('transaction_isolation');
  END IF;
  -- Seals take turns and draw their batch number once they hold the lock, so a batch's number is
  -- larger than that of every batch committed before it: whoever has seen batch B committed has
  -- seen every batch below B, and the coordinator can keep one "merged up to" number per node.
  LOCK TABLE filter_outbox IN SHARE ROW EXCLUSIVE MODE;
  -- One statement deletes the pending rows and builds the batch from exactly the rows it deleted:
  -- an email leaves filter_pending only inside a batch. Signups not yet committed are not seen
  -- and stay for the next seal.
  WITH moved AS (DELETE FROM filter_pending RETURNING email)
  INSERT INTO filter_outbox (batch, emails, f)
  SELECT pg_catalog.nextval('filter_outbox_batch'), pg_catalog.count(*),
         bloom_agg(moved.email, p.capacity, p.error_rate)
  FROM moved CROSS JOIN filter_params p
  HAVING pg_catalog.count(*) > 0
  RETURNING batch INTO sealed;
  RETURN sealed;
END $$;
