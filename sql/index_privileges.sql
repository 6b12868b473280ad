-- Who may check a bloomfilter index: an answer reveals whether a value is in the indexed
-- columns, so the caller needs SELECT on them, and a table with row-level security is refused
-- unless the caller bypasses it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP ROLE IF EXISTS regress_bloom_index_reader;
DROP ROLE IF EXISTS regress_bloom_index_bypass;
DROP SCHEMA IF EXISTS regress_bloom_owned CASCADE;
DROP ROLE IF EXISTS regress_bloom_index_owner;
RESET client_min_messages;
CREATE ROLE regress_bloom_index_reader;
CREATE ROLE regress_bloom_index_bypass BYPASSRLS;

CREATE TABLE index_secrets (id int, email text, note text);
INSERT INTO index_secrets SELECT i, 'user' || i || '@mail.com', 'note' || i FROM generate_series(1, 100) i;
CREATE INDEX index_secrets_email ON index_secrets USING bloomfilter (email) WITH (capacity = 100);
CREATE INDEX index_secrets_email_ci ON index_secrets USING bloomfilter (lower(email)) WITH (capacity = 100);
CREATE INDEX index_secrets_live ON index_secrets USING bloomfilter (email) WITH (capacity = 100) WHERE note IS NOT NULL;

\set VERBOSITY sqlstate
-- No privilege, or SELECT on another column only: refused.
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com');
SELECT bloom_index_filter('index_secrets_email') IS NOT NULL;
RESET ROLE;
GRANT SELECT (id) ON index_secrets TO regress_bloom_index_reader;
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com');
RESET ROLE;
-- SELECT on the indexed column: allowed; an expression's column counts, and so does the
-- predicate's.
GRANT SELECT (email) ON index_secrets TO regress_bloom_index_reader;
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com') AS column_privilege,
       bloom_index_contains('index_secrets_email_ci', 'USER7@mail.com') AS expression;
SELECT bloom_index_contains('index_secrets_live', 'user7@mail.com');
RESET ROLE;
GRANT SELECT ON index_secrets TO regress_bloom_index_reader;
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_live', 'user7@mail.com') AS table_privilege;
-- A revoke takes effect at once, in the same session.
RESET ROLE;
REVOKE SELECT ON index_secrets FROM regress_bloom_index_reader;
REVOKE SELECT (id, email) ON index_secrets FROM regress_bloom_index_reader;
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com');
RESET ROLE;

-- Row-level security: refused, even with SELECT, unless the role bypasses it.
GRANT SELECT ON index_secrets TO regress_bloom_index_reader, regress_bloom_index_bypass;
ALTER TABLE index_secrets ENABLE ROW LEVEL SECURITY;
CREATE POLICY index_secrets_own ON index_secrets FOR SELECT USING (id = 1);
SET ROLE regress_bloom_index_reader;
SELECT count(*) AS visible_rows FROM index_secrets;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com');
SELECT bloom_index_filter('index_secrets_email') IS NOT NULL;
RESET ROLE;
SET ROLE regress_bloom_index_bypass;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com') AS bypasses_rls;
RESET ROLE;
-- The owner (here a superuser) is not subject to it, unless it is forced.
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com') AS owner;
\set VERBOSITY default
SET ROLE regress_bloom_index_reader;
SELECT bloom_index_contains('index_secrets_email', 'user7@mail.com');
RESET ROLE;

DROP TABLE index_secrets;

-- An expression index's functions are its table owner's code: a check runs them as the owner
-- in a security-restricted operation, never with the caller's rights (here a superuser's).
CREATE ROLE regress_bloom_index_owner;
CREATE SCHEMA regress_bloom_owned AUTHORIZATION regress_bloom_index_owner;
SET ROLE regress_bloom_index_owner;
CREATE FUNCTION regress_bloom_owned.lower_noting(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RAISE NOTICE 'the expression runs as %', current_user;
  RETURN lower(t);
END $$;
CREATE TABLE regress_bloom_owned.accounts (email text);
INSERT INTO regress_bloom_owned.accounts VALUES ('User1@mail.com');
CREATE INDEX accounts_email_ci ON regress_bloom_owned.accounts
  USING bloomfilter (regress_bloom_owned.lower_noting(email)) WITH (capacity = 10);
RESET ROLE;
SELECT current_user = 'regress_bloom_index_owner' AS caller_is_owner;
SELECT bloom_index_contains('regress_bloom_owned.accounts_email_ci', 'USER1@mail.com') AS found;
DROP SCHEMA regress_bloom_owned CASCADE;

-- The owner's code runs with search_path = pg_catalog, pg_temp: a reader that puts a schema of
-- its own first in search_path does not get its function called as the owner by an owner's
-- function that names lower() unqualified.
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_bloom_index_planter;
RESET client_min_messages;
CREATE ROLE regress_bloom_index_planter;
CREATE SCHEMA regress_bloom_victim AUTHORIZATION regress_bloom_index_owner;
CREATE SCHEMA regress_bloom_planted AUTHORIZATION regress_bloom_index_planter;
SET ROLE regress_bloom_index_owner;
CREATE FUNCTION regress_bloom_victim.normalized(t text) RETURNS text LANGUAGE sql IMMUTABLE
  AS 'SELECT lower(t)';
CREATE TABLE regress_bloom_victim.accounts (email text);
CREATE TABLE regress_bloom_victim.secrets (secret text);
INSERT INTO regress_bloom_victim.secrets VALUES ('the owner''s secret');
INSERT INTO regress_bloom_victim.accounts VALUES ('user1@mail.com');
CREATE INDEX accounts_normalized ON regress_bloom_victim.accounts
  USING bloomfilter (regress_bloom_victim.normalized(email)) WITH (capacity = 10);
GRANT USAGE ON SCHEMA regress_bloom_victim TO regress_bloom_index_planter;
GRANT SELECT ON regress_bloom_victim.accounts TO regress_bloom_index_planter;
SET ROLE regress_bloom_index_planter;
GRANT USAGE ON SCHEMA regress_bloom_planted TO PUBLIC;
CREATE FUNCTION regress_bloom_planted.lower(t text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'the planted lower() runs as %, and reads %', current_user,
    (SELECT string_agg(secret, ',') FROM regress_bloom_victim.secrets);
  RETURN pg_catalog.lower(t);
END $$;
SET search_path = regress_bloom_planted, pg_catalog, public;
-- The expression calls the owner's function: a reader who is not the owner is refused (42501)
-- before anything runs, and checks the key it computed itself instead.
SELECT bloom_index_contains('regress_bloom_victim.accounts_normalized', 'USER1@mail.com') AS found;
SELECT bloom_index_contains_key('regress_bloom_victim.accounts_normalized', pg_catalog.lower('USER1@mail.com')) AS found_key;
-- Nor when the index's expressions are first loaded in a session by such a reader: the relcache
-- then inlines the owner's SQL function with the reader's search_path (here into a planted
-- function declared immutable), and a check evaluates the expression as stored instead.
ALTER FUNCTION regress_bloom_planted.lower(text) IMMUTABLE;
\c
SET ROLE regress_bloom_index_planter;
SET search_path = regress_bloom_planted, pg_catalog, public;
SELECT bloom_index_contains('regress_bloom_victim.accounts_normalized', 'USER1@mail.com') AS found;
-- Which columns the privilege check asks for come from the stored expression too: a planted
-- lower() that ignores its argument leaves the relcache's copy with no column (refused as 0A000),
-- while the stored one reads email, which this reader may not (42501).
RESET search_path;
DROP FUNCTION regress_bloom_planted.lower(text);
CREATE FUNCTION regress_bloom_planted.lower(t text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$SELECT 'constant'::text$$;
RESET ROLE;
REVOKE SELECT ON regress_bloom_victim.accounts FROM regress_bloom_index_planter;
\c
SET ROLE regress_bloom_index_planter;
SET search_path = regress_bloom_planted, pg_catalog, public;
\set VERBOSITY sqlstate
SELECT bloom_index_contains('regress_bloom_victim.accounts_normalized', 'USER1@mail.com');
\set VERBOSITY default
RESET search_path;
RESET ROLE;
DROP SCHEMA regress_bloom_victim, regress_bloom_planted CASCADE;
DROP ROLE regress_bloom_index_planter;

-- An expression whose function checks the index itself, while the check evaluates it: refused
-- (55006), and the index answers again afterwards. (Allowed, the inner check would overwrite the
-- value the outer one is evaluating and free its memory: here it hashed 'outerouterinner'.)
CREATE TABLE index_nested (email text);
CREATE FUNCTION pg_temp.checks_itself(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF t = 'outer' THEN
    PERFORM bloom_index_contains('index_nested_expression', 'inner'::text);
  END IF;
  RETURN t;
END $$;
CREATE INDEX index_nested_expression ON index_nested USING bloomfilter
  ((email || pg_temp.checks_itself(email) || email)) WITH (capacity = 10);
INSERT INTO index_nested VALUES ('outer'), ('a@mail.com');
\set VERBOSITY sqlstate
SELECT bloom_index_contains('index_nested_expression', 'outer'::text);
\set VERBOSITY default
SELECT bloom_index_contains('index_nested_expression', 'a@mail.com') AS found_afterwards;
DROP TABLE index_nested;

DROP ROLE regress_bloom_index_reader;
DROP ROLE regress_bloom_index_bypass;
DROP ROLE regress_bloom_index_owner;
