-- An index's expression and predicate are its table owner's code. A check must never run them
-- with the caller's rights: not while working out what the check needs (the relcache's copies of
-- an index's expressions are constant-folded as whoever loads them, which runs an IMMUTABLE
-- function called with constant arguments), and never before the caller's privileges are
-- checked. Each call is made in a fresh session, whose relcache has loaded nothing yet (SET ROLE
-- loads none of it).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP SCHEMA IF EXISTS regress_bloom_oc CASCADE;
DROP ROLE IF EXISTS regress_bloom_oc_owner;
DROP ROLE IF EXISTS regress_bloom_oc_reader;
RESET client_min_messages;
CREATE ROLE regress_bloom_oc_owner;
CREATE ROLE regress_bloom_oc_reader;
CREATE SCHEMA regress_bloom_oc AUTHORIZATION regress_bloom_oc_owner;
GRANT USAGE ON SCHEMA regress_bloom_oc TO regress_bloom_oc_reader;

SET ROLE regress_bloom_oc_owner;
SET search_path = regress_bloom_oc, public;
-- Says who it runs as: a hostile owner's function would do what only the caller may.
CREATE FUNCTION regress_bloom_oc.stamp(what text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RAISE NOTICE 'stamp(%) ran as %', what,
    CASE WHEN current_user = 'regress_bloom_oc_owner' THEN 'the owner' ELSE 'the caller' END;
  RETURN what;
END $$;
CREATE TABLE regress_bloom_oc.mails (email text);
INSERT INTO regress_bloom_oc.mails SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100) i;
CREATE INDEX mails_expr ON regress_bloom_oc.mails USING bloomfilter ((email || regress_bloom_oc.stamp('expr')))
  WITH (capacity = 100);
CREATE INDEX mails_pred ON regress_bloom_oc.mails USING bloomfilter (email)
  WITH (capacity = 100) WHERE email <> regress_bloom_oc.stamp('pred');
RESET ROLE;
RESET search_path;

-- The caller is a superuser: the expression runs as the owner alone, when a check evaluates it;
-- reading a filter runs none of it.
\c
SELECT bloom_index_contains('regress_bloom_oc.mails_expr', 'user7@mail.com') AS expr_present;
\c
SELECT bloom_index_contains('regress_bloom_oc.mails_pred', 'user7@mail.com') AS pred_present;
\c
SELECT bloom_index_filter('regress_bloom_oc.mails_expr') IS NOT NULL AS expr_filter,
       bloom_index_filter('regress_bloom_oc.mails_pred') IS NOT NULL AS pred_filter;
\c
SELECT count(*) > 0 AS expr_changes FROM bloom_index_changes('regress_bloom_oc.mails_expr', '0/0');
\c
SELECT count(*) > 0 AS pred_changes FROM bloom_index_changes('regress_bloom_oc.mails_pred', '0/0');
\c
SELECT capacity FROM bloom_index_info('regress_bloom_oc.mails_expr');
\c
SELECT capacity FROM bloom_index_info('regress_bloom_oc.mails_pred');
-- bloom_index_verify evaluates both, as the owner.
\c
SELECT bloom_index_verify('regress_bloom_oc.mails_expr') AS expr_rows;
\c
SELECT bloom_index_verify('regress_bloom_oc.mails_pred') AS pred_rows;

-- A role without SELECT on the table: refused before anything of the owner's runs.
\set VERBOSITY sqlstate
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_contains('regress_bloom_oc.mails_expr', 'user7@mail.com');
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_contains('regress_bloom_oc.mails_pred', 'user7@mail.com');
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_filter('regress_bloom_oc.mails_expr');
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_changes('regress_bloom_oc.mails_pred', '0/0');
\c
SET ROLE regress_bloom_oc_reader;
SELECT capacity FROM bloom_index_info('regress_bloom_oc.mails_expr');
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_verify('regress_bloom_oc.mails_pred');
-- Without USAGE on the table's schema, the index's OID alone reaches nothing, even with SELECT.
\c
GRANT SELECT ON regress_bloom_oc.mails TO regress_bloom_oc_reader;
SELECT 'regress_bloom_oc.mails_pred'::regclass::oid AS pred_oid \gset
REVOKE USAGE ON SCHEMA regress_bloom_oc FROM regress_bloom_oc_reader;
\c
SET ROLE regress_bloom_oc_reader;
SELECT bloom_index_contains(:pred_oid, 'user7@mail.com');
SELECT bloom_index_verify(:pred_oid);
\c
GRANT USAGE ON SCHEMA regress_bloom_oc TO regress_bloom_oc_reader;
\c
SET ROLE regress_bloom_oc_reader;
\set VERBOSITY default
SELECT bloom_index_contains(:pred_oid, 'user7@mail.com') AS with_usage;
\c

-- A domain's values are checked as its base type's, plain and through an expression, on a
-- partitioned table routed by the domain column too.
CREATE DOMAIN regress_bloom_oc.email AS text CHECK (VALUE LIKE '%@%');
CREATE DOMAIN regress_bloom_oc.small AS int CHECK (VALUE > 0);
CREATE TABLE regress_bloom_oc.accounts (email regress_bloom_oc.email, n regress_bloom_oc.small);
INSERT INTO regress_bloom_oc.accounts SELECT 'user' || i || '@mail.com', i FROM generate_series(1, 1000) i;
CREATE INDEX accounts_email ON regress_bloom_oc.accounts USING bloomfilter (email) WITH (capacity = 1000);
CREATE INDEX accounts_lower ON regress_bloom_oc.accounts USING bloomfilter (lower(email)) WITH (capacity = 1000);
CREATE INDEX accounts_n ON regress_bloom_oc.accounts USING bloomfilter (n) WITH (capacity = 1000);
SELECT bloom_index_contains('regress_bloom_oc.accounts_email', 'user7@mail.com') AS present,
       bloom_index_contains('regress_bloom_oc.accounts_email', 'ghost@mail.com') AS absent,
       bloom_index_contains('regress_bloom_oc.accounts_lower', 'USER7@mail.com') AS lower_present,
       bloom_index_contains('regress_bloom_oc.accounts_n', 7) AS n_present,
       bloom_index_contains('regress_bloom_oc.accounts_n', 5000000000) AS n_out_of_range;
SELECT bloom_contains(bloom_index_filter('regress_bloom_oc.accounts_email'), 'user7@mail.com'::text) AS filter_present;
SELECT bloom_index_verify('regress_bloom_oc.accounts_email') AS email_rows,
       bloom_index_verify('regress_bloom_oc.accounts_lower') AS lower_rows;
CREATE TABLE regress_bloom_oc.routed (email regress_bloom_oc.email) PARTITION BY HASH (email);
CREATE TABLE regress_bloom_oc.routed_0 PARTITION OF regress_bloom_oc.routed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE regress_bloom_oc.routed_1 PARTITION OF regress_bloom_oc.routed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX routed_email ON regress_bloom_oc.routed USING bloomfilter (email) WITH (capacity = 1000);
INSERT INTO regress_bloom_oc.routed SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i;
SELECT count(*) AS found FROM generate_series(1, 1000) i
WHERE bloom_index_contains('regress_bloom_oc.routed_email', 'user' || i || '@mail.com');
SELECT bloom_index_verify('regress_bloom_oc.routed_email') AS routed_rows;

SET client_min_messages = warning;
DROP SCHEMA regress_bloom_oc CASCADE;
DROP ROLE regress_bloom_oc_owner;
DROP ROLE regress_bloom_oc_reader;
