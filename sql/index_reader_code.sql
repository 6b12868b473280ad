-- A role that may only read a table never has the table owner's code run with the owner's
-- rights: not the index's expression (whose functions would run, as the owner, on a value the
-- reader chose, in the reader's session, with its temporary objects), not through any function
-- of the extension. An expression of built-in code alone is evaluated as the reader; any other
-- only for the owner and its members. The reader's own objects below say who they run as: a
-- NOTICE "payload runs as regress_bloom_rc_owner" is the escalation.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP SCHEMA IF EXISTS regress_bloom_rc CASCADE;
DROP ROLE IF EXISTS regress_bloom_rc_owner;
DROP ROLE IF EXISTS regress_bloom_rc_reader;
DROP ROLE IF EXISTS regress_bloom_rc_member;
DROP ROLE IF EXISTS regress_bloom_rc_later;
DROP ROLE IF EXISTS regress_bloom_rc_nobody;
RESET client_min_messages;
CREATE ROLE regress_bloom_rc_owner;
CREATE ROLE regress_bloom_rc_reader;
CREATE ROLE regress_bloom_rc_member IN ROLE regress_bloom_rc_owner;
CREATE SCHEMA regress_bloom_rc AUTHORIZATION regress_bloom_rc_owner;
GRANT USAGE ON SCHEMA regress_bloom_rc TO regress_bloom_rc_reader;

SET ROLE regress_bloom_rc_owner;
SET search_path = regress_bloom_rc;
-- (a) A function with its own search_path, as index functions are often written: PostgreSQL
-- searches pg_temp first for types when the path does not list it, so the caller's pg_temp.text
-- would be the type of `r`.
CREATE FUNCTION regress_bloom_rc.norm(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE
  SET search_path = regress_bloom_rc AS $$
DECLARE r text;
BEGIN
  r := lower(t);
  RETURN r;
END $$;
-- (b) A function body that names a table unqualified: under the owner's restricted
-- search_path (pg_catalog, pg_temp) it would resolve to the caller's temporary view.
CREATE TABLE regress_bloom_rc.suffixes (suffix text);
CREATE FUNCTION regress_bloom_rc.tagged(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN t || coalesce((SELECT min(suffix) FROM suffixes), '');
END $$;
REVOKE EXECUTE ON FUNCTION regress_bloom_rc.norm(text), regress_bloom_rc.tagged(text) FROM PUBLIC;
CREATE TABLE regress_bloom_rc.accounts (id int, email text, secret text);
CREATE INDEX accounts_norm ON regress_bloom_rc.accounts USING bloomfilter (regress_bloom_rc.norm(email))
  WITH (capacity = 100);
CREATE INDEX accounts_tagged ON regress_bloom_rc.accounts USING bloomfilter (regress_bloom_rc.tagged(email))
  WITH (capacity = 100);
CREATE INDEX accounts_lower ON regress_bloom_rc.accounts USING bloomfilter (lower(btrim(email)))
  WITH (capacity = 100);
CREATE INDEX accounts_tagged_pred ON regress_bloom_rc.accounts USING bloomfilter (email)
  WITH (capacity = 100) WHERE regress_bloom_rc.tagged(email) <> '';
-- The rows after the indexes: PostgreSQL 17 builds an index with search_path = pg_catalog,
-- pg_temp, where tagged() would find no table; an insert runs it with the owner's.
INSERT INTO regress_bloom_rc.accounts
  SELECT i, 'user' || i || '@mail.com', 'secret ' || i FROM generate_series(1, 100) i;
RESET search_path;
GRANT SELECT (email) ON regress_bloom_rc.accounts TO regress_bloom_rc_reader;
RESET ROLE;

-- The reader's temporary objects, in a session of its own: a function that reports who runs it
-- (it could read the owner's secrets), a pg_temp.text domain and a pg_temp.suffixes view that
-- call it.
\c
SET ROLE regress_bloom_rc_reader;
CREATE FUNCTION pg_temp.payload() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'payload runs as %', current_user;
  RETURN true;
END $$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.payload());
CREATE VIEW pg_temp.suffixes AS SELECT 'x'::pg_catalog.text AS suffix WHERE pg_temp.payload();
GRANT SELECT ON pg_temp.suffixes TO PUBLIC;
\set VERBOSITY default
-- Through every function of the extension that reads an index: those that would evaluate the
-- owner's code refuse (42501), with the way to check the key instead; the others run nothing.
SELECT bloom_index_contains('regress_bloom_rc.accounts_norm', 'USER7@mail.com');
SELECT bloom_index_contains('regress_bloom_rc.accounts_tagged', 'user7@mail.com');
SELECT bloom_index_contains('regress_bloom_rc.accounts_norm'::regclass, 'USER7@mail.com');
\set VERBOSITY sqlstate
SELECT bloom_index_verify('regress_bloom_rc.accounts_norm');
SELECT bloom_index_verify('regress_bloom_rc.accounts_tagged');
SELECT bloom_index_verify('regress_bloom_rc.accounts_tagged_pred');
SELECT bloom_index_verify('regress_bloom_rc.accounts_lower');
\set VERBOSITY default
SELECT bloom_index_contains('regress_bloom_rc.accounts_tagged_pred', 'user7@mail.com') AS pred_present;
SELECT bloom_contains(bloom_index_filter('regress_bloom_rc.accounts_norm'), 'user7@mail.com'::pg_catalog.text) AS in_filter;
SELECT count(*) > 0 AS changes FROM bloom_index_changes('regress_bloom_rc.accounts_tagged', '0/0');
SELECT capacity FROM bloom_index_info('regress_bloom_rc.accounts_tagged');
-- The key the reader computes itself: the expression is not evaluated.
SELECT bloom_index_contains_key('regress_bloom_rc.accounts_norm', 'user7@mail.com') AS key_present,
       bloom_index_contains_key('regress_bloom_rc.accounts_norm', 'ghost@mail.com') AS key_absent,
       bloom_index_contains_key('regress_bloom_rc.accounts_norm'::regclass, 'user7@mail.com') AS by_oid;
-- Built-in code alone (lower, btrim): evaluated as the reader, with its rights.
SELECT bloom_index_contains('regress_bloom_rc.accounts_lower', '  USER7@mail.com ') AS lower_present,
       bloom_index_contains('regress_bloom_rc.accounts_lower', 'ghost@mail.com') AS lower_absent;
\c

-- A role with nothing but what PUBLIC has (CONNECT, TEMP), with the same temporary objects:
-- every function refuses it before anything of the owner's runs.
CREATE ROLE regress_bloom_rc_nobody;
\c
SET ROLE regress_bloom_rc_nobody;
CREATE FUNCTION pg_temp.payload() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'payload runs as %', current_user;
  RETURN true;
END $$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.payload());
CREATE VIEW pg_temp.suffixes AS SELECT 'x'::pg_catalog.text AS suffix WHERE pg_temp.payload();
GRANT SELECT ON pg_temp.suffixes TO PUBLIC;
\set VERBOSITY sqlstate
SELECT bloom_index_contains('regress_bloom_rc.accounts_norm', 'USER7@mail.com');
SELECT bloom_index_contains('regress_bloom_rc.accounts_tagged', 'user7@mail.com');
SELECT bloom_index_contains_key('regress_bloom_rc.accounts_norm', 'user7@mail.com');
SELECT bloom_index_verify('regress_bloom_rc.accounts_tagged_pred');
SELECT bloom_index_filter('regress_bloom_rc.accounts_norm') IS NULL;
SELECT count(*) FROM bloom_index_changes('regress_bloom_rc.accounts_tagged', '0/0');
SELECT capacity FROM bloom_index_info('regress_bloom_rc.accounts_tagged');
\set VERBOSITY default
\c

-- A member of the owner's role could run the owner's functions itself: evaluated, as the owner,
-- with search_path = pg_catalog, pg_temp (the unqualified table of tagged() is not found, as
-- REINDEX on PostgreSQL 17 would not find it).
SET ROLE regress_bloom_rc_member;
SELECT bloom_index_contains('regress_bloom_rc.accounts_norm', 'USER7@mail.com') AS member_present;
SELECT bloom_index_verify('regress_bloom_rc.accounts_norm') AS member_verified;
SELECT bloom_index_contains('regress_bloom_rc.accounts_tagged', 'user7@mail.com') AS member_tagged;
RESET ROLE;
-- A superuser: evaluated as the owner, never with the superuser's rights.
SELECT bloom_index_contains('regress_bloom_rc.accounts_norm', 'USER7@mail.com') AS superuser_present;

-- Which expressions count as built in: a domain coercion, an SQL function of pg_catalog (its body
-- is parsed when it runs), a function or type of another schema do not.
CREATE DOMAIN regress_bloom_rc.lowered AS text CHECK (VALUE = lower(VALUE));
CREATE TABLE regress_bloom_rc.kinds (email text);
INSERT INTO regress_bloom_rc.kinds VALUES ('user7@mail.com');
CREATE INDEX kinds_domain ON regress_bloom_rc.kinds USING bloomfilter ((lower(email)::regress_bloom_rc.lowered));
CREATE INDEX kinds_cast ON regress_bloom_rc.kinds USING bloomfilter ((('x' || upper(email))::varchar(40)));
CREATE INDEX kinds_case ON regress_bloom_rc.kinds USING bloomfilter
  ((CASE WHEN email LIKE '%@%' THEN split_part(email, '@', 2) ELSE coalesce(nullif(email, ''), 'none') END));
ALTER TABLE regress_bloom_rc.kinds OWNER TO regress_bloom_rc_owner;
GRANT SELECT ON regress_bloom_rc.kinds TO regress_bloom_rc_reader;
SET ROLE regress_bloom_rc_reader;
\set VERBOSITY sqlstate
SELECT bloom_index_contains('regress_bloom_rc.kinds_domain', 'USER7@mail.com');
\set VERBOSITY default
SELECT bloom_index_contains('regress_bloom_rc.kinds_cast', 'user7@mail.com') AS cast_present,
       bloom_index_contains('regress_bloom_rc.kinds_case', 'someone@mail.com') AS case_present;
RESET ROLE;

-- Privileges at each call: a GRANT undone by a rolled-back subtransaction of the same statement
-- no longer lets the same call site answer.
CREATE ROLE regress_bloom_rc_later;
GRANT USAGE ON SCHEMA regress_bloom_rc TO regress_bloom_rc_later;
CREATE FUNCTION pg_temp.check_twice() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  i int;
BEGIN
  FOR i IN 1 .. 2 LOOP
    BEGIN
      IF i = 1 THEN
        GRANT SELECT ON regress_bloom_rc.kinds TO regress_bloom_rc_later;
      END IF;
      PERFORM set_config('role', 'regress_bloom_rc_later', true);
      RETURN NEXT 'call ' || i || ': ' || bloom_index_contains('regress_bloom_rc.kinds_cast', 'user7@mail.com')::text;
      RAISE EXCEPTION 'undo';
    EXCEPTION
      WHEN raise_exception THEN RETURN NEXT 'call ' || i || ': rolled back';
      WHEN insufficient_privilege THEN RETURN NEXT 'call ' || i || ': ' || SQLSTATE || ' ' || SQLERRM;
    END;
  END LOOP;
END $$;
SELECT * FROM pg_temp.check_twice();

SET client_min_messages = warning;
DROP SCHEMA regress_bloom_rc CASCADE;
DROP ROLE regress_bloom_rc_member;
DROP ROLE regress_bloom_rc_later;
DROP ROLE regress_bloom_rc_nobody;
DROP ROLE regress_bloom_rc_reader;
DROP ROLE regress_bloom_rc_owner;
