-- EXECUTE on the functions of an index's expression, checked for the current user at every
-- check, as the executor checks a statement's: whoever checked the index before in this session
-- (another role, a SECURITY DEFINER function's owner, the session's first user) gives nothing to
-- the next role. md5() has EXECUTE revoked from PUBLIC here, granted back at the end.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP SCHEMA IF EXISTS regress_bloom_ex CASCADE;
DROP ROLE IF EXISTS regress_bloom_ex_owner;
DROP ROLE IF EXISTS regress_bloom_ex_writer;
DROP ROLE IF EXISTS regress_bloom_ex_reader;
DROP ROLE IF EXISTS regress_bloom_ex_hashers;
RESET client_min_messages;
CREATE ROLE regress_bloom_ex_owner;
CREATE ROLE regress_bloom_ex_writer;
CREATE ROLE regress_bloom_ex_reader;
CREATE SCHEMA regress_bloom_ex AUTHORIZATION regress_bloom_ex_owner;
GRANT USAGE ON SCHEMA regress_bloom_ex TO regress_bloom_ex_writer, regress_bloom_ex_reader;
CREATE TABLE regress_bloom_ex.accounts (email text);
INSERT INTO regress_bloom_ex.accounts
  SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100) i;
CREATE INDEX accounts_md5 ON regress_bloom_ex.accounts USING bloomfilter (md5(email))
  WITH (capacity = 100);
-- An operator's function (textcat, of ||) as well as a function call.
CREATE INDEX accounts_cat ON regress_bloom_ex.accounts USING bloomfilter ((email || '!'))
  WITH (capacity = 100);
ALTER TABLE regress_bloom_ex.accounts OWNER TO regress_bloom_ex_owner;
GRANT SELECT ON regress_bloom_ex.accounts TO regress_bloom_ex_writer, regress_bloom_ex_reader;
REVOKE EXECUTE ON FUNCTION md5(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION md5(text) TO regress_bloom_ex_owner, regress_bloom_ex_writer;
SELECT md5('user7@mail.com') AS user7_md5 \gset

-- A fresh session of the reader: refused when the expression is built.
\c
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS fresh_reader;
RESET ROLE;

-- The writer checks first (the expression, built in, is evaluated as the writer), then the reader
-- in the same session: refused as in its own session, by name and by OID, and again at the next
-- call; the writer still answers after it.
\c
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS writer_present,
       bloom_index_contains('regress_bloom_ex.accounts_md5', 'ghost@mail.com') AS writer_absent;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS reader_present;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5'::regclass, 'user7@mail.com') AS reader_by_oid;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS reader_again;
-- The key, which the reader computes itself: no expression is evaluated.
SELECT bloom_index_contains_key('regress_bloom_ex.accounts_md5', (:'user7_md5')::text) AS reader_key;
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS writer_after;
RESET ROLE;

-- The table's owner (its expression evaluated as the owner), then the reader.
\c
SET ROLE regress_bloom_ex_owner;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS owner_present;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS reader_after_owner;
RESET ROLE;

-- A prepared statement executed again after SET ROLE, as PostgreSQL checks its own statements'
-- functions at each execution.
\c
PREPARE check_md5(text) AS SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', $1);
SET ROLE regress_bloom_ex_writer;
EXECUTE check_md5('user7@mail.com');
SET ROLE regress_bloom_ex_reader;
EXECUTE check_md5('user7@mail.com');
RESET ROLE;
DEALLOCATE check_md5;

-- SET LOCAL ROLE inside a transaction, and a REVOKE there: at the next call.
\c
BEGIN;
SET LOCAL ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS in_transaction;
SAVEPOINT reader;
SET LOCAL ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS local_reader;
ROLLBACK TO SAVEPOINT reader;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION md5(text) FROM regress_bloom_ex_writer;
SET LOCAL ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS writer_revoked;
ROLLBACK;
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS writer_rolled_back;
RESET ROLE;

-- A SECURITY DEFINER function of the writer's: its checks are the writer's, whoever calls it; the
-- caller's own check right after is its own.
CREATE FUNCTION regress_bloom_ex.writer_checks(value text) RETURNS boolean LANGUAGE sql
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  AS $$ SELECT public.bloom_index_contains('regress_bloom_ex.accounts_md5', value) $$;
ALTER FUNCTION regress_bloom_ex.writer_checks(text) OWNER TO regress_bloom_ex_writer;
\c
SET ROLE regress_bloom_ex_reader;
SELECT regress_bloom_ex.writer_checks('user7@mail.com') AS through_definer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS reader_after_definer;
SELECT regress_bloom_ex.writer_checks('user7@mail.com') AS through_definer_again;
RESET ROLE;

-- SET SESSION AUTHORIZATION after the writer's check.
\c
SET SESSION AUTHORIZATION regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS session_writer;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS session_reader;
RESET SESSION AUTHORIZATION;

-- An operator's function: textcat (of ||), revoked from PUBLIC while the reader checks.
\c
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_cat', 'user7@mail.com') AS cat_writer;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION textcat(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION textcat(text, text) TO regress_bloom_ex_writer;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_cat', 'user7@mail.com') AS cat_reader;
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_cat', 'user7@mail.com') AS cat_writer_again;
RESET ROLE;
GRANT EXECUTE ON FUNCTION textcat(text, text) TO PUBLIC;
REVOKE EXECUTE ON FUNCTION textcat(text, text) FROM regress_bloom_ex_writer;

-- A GRANT that a rolled-back subtransaction of the same statement made no longer holds (the
-- expression planned by the writer's check first).
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS writer_first;
RESET ROLE;
CREATE FUNCTION pg_temp.check_twice() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 2 LOOP
    BEGIN
      IF i = 1 THEN
        GRANT EXECUTE ON FUNCTION md5(text) TO regress_bloom_ex_reader;
      END IF;
      PERFORM set_config('role', 'regress_bloom_ex_reader', true);
      RETURN NEXT 'call ' || i || ': ' || bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com')::text;
      RAISE EXCEPTION 'undo';
    EXCEPTION
      WHEN raise_exception THEN RETURN NEXT 'call ' || i || ': rolled back';
      WHEN insufficient_privilege THEN RETURN NEXT 'call ' || i || ': ' || SQLSTATE || ' ' || SQLERRM;
    END;
  END LOOP;
END $$;
SELECT * FROM pg_temp.check_twice();

-- EXECUTE through a role the reader is a member of, then another session's REVOKE of the
-- membership, and of the role's EXECUTE: each takes effect at the next call.
CREATE ROLE regress_bloom_ex_hashers;
GRANT EXECUTE ON FUNCTION md5(text) TO regress_bloom_ex_hashers;
GRANT regress_bloom_ex_hashers TO regress_bloom_ex_reader;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('regress_other', format('dbname=%s port=%s host=%s', current_database(),
  current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1))) AS other_session;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS as_member;
RESET ROLE;
SELECT dblink_exec('regress_other', 'REVOKE regress_bloom_ex_hashers FROM regress_bloom_ex_reader');
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS membership_revoked;
RESET ROLE;
GRANT regress_bloom_ex_hashers TO regress_bloom_ex_reader;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS member_again;
RESET ROLE;
SELECT dblink_exec('regress_other', 'REVOKE EXECUTE ON FUNCTION md5(text) FROM regress_bloom_ex_hashers');
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_md5', 'user7@mail.com') AS execute_revoked;
RESET ROLE;
SELECT dblink_disconnect('regress_other');
DROP EXTENSION dblink;
DROP ROLE regress_bloom_ex_hashers;

-- A multicolumn index with an expression part: the same at every check, first the writer, then
-- the reader in the same session.
ALTER TABLE regress_bloom_ex.accounts ADD COLUMN tenant int NOT NULL DEFAULT 1;
CREATE INDEX accounts_tenant_md5 ON regress_bloom_ex.accounts
  USING bloomfilter (tenant, md5(email)) WITH (capacity = 100);
\c
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_tenant_md5', 1, 'user7@mail.com') AS composite_writer;
SET ROLE regress_bloom_ex_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_tenant_md5', 1, 'user7@mail.com') AS composite_reader;
SELECT bloom_index_contains('regress_bloom_ex.accounts_tenant_md5'::regclass, 1, 'user7@mail.com') AS composite_reader_by_oid;
SET ROLE regress_bloom_ex_writer;
SELECT bloom_index_contains('regress_bloom_ex.accounts_tenant_md5', 1, 'user7@mail.com') AS composite_writer_again;
RESET ROLE;

GRANT EXECUTE ON FUNCTION md5(text) TO PUBLIC;
SET client_min_messages = warning;
DROP SCHEMA regress_bloom_ex CASCADE;
REVOKE EXECUTE ON FUNCTION md5(text) FROM regress_bloom_ex_owner, regress_bloom_ex_writer;
DROP ROLE regress_bloom_ex_owner;
DROP ROLE regress_bloom_ex_writer;
DROP ROLE regress_bloom_ex_reader;
