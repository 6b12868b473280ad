-- Security of maintained filters in a trusted extension (see README, "Privileges").
-- A non-superuser database owner plants operators, functions and aggregates in public before
-- installing the extension; each logs the role it runs as. A superuser then uses every
-- maintained-filter function, also with search_path = public, pg_catalog, and roles with few
-- rights attack the filter tables and the trigger function. Every attack must end in an ERROR
-- with the SQLSTATE shown, no planted object may run as another role, and the server must not
-- restart. Done on a fresh install of 1.4 (the last version with maintained filters, which a
-- database not yet updated keeps), and on an install of 1.1 (which binds the planted operators)
-- updated to 1.4; then the database owner updates the first to 2.0, which turns the filters
-- into bloomfilter indexes. The roles act through SET SESSION AUTHORIZATION, not new
-- connections, so any authentication works (peer included).
\set original_database :DBNAME
SELECT pg_postmaster_start_time() AS start_time \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_bloom_security;
DROP DATABASE IF EXISTS regress_bloom_security_updated;
DROP DATABASE IF EXISTS regress_bloom_planted;
DROP ROLE IF EXISTS regress_bloom_dbowner;
DROP ROLE IF EXISTS regress_bloom_nobody;
DROP ROLE IF EXISTS regress_bloom_tenant;
DROP ROLE IF EXISTS regress_bloom_reader;
RESET client_min_messages;
-- The database owner (not a superuser); a role owning nothing, with only the CONNECT and TEMP
-- every role gets; a role owning a schema and tables of its own; a role that may read a column.
CREATE ROLE regress_bloom_dbowner LOGIN;
CREATE ROLE regress_bloom_nobody LOGIN;
CREATE ROLE regress_bloom_tenant LOGIN;
CREATE ROLE regress_bloom_reader LOGIN;
CREATE DATABASE regress_bloom_planted OWNER regress_bloom_dbowner;

-- The planted objects: each answers like the built-in it shadows, after logging who runs it.
\c regress_bloom_planted
SET SESSION AUTHORIZATION regress_bloom_dbowner;
CREATE TABLE public.hijack_log (object text, run_as name, session_role name);
GRANT SELECT, INSERT ON public.hijack_log TO PUBLIC;
CREATE FUNCTION public.hijack_note(object text) RETURNS void LANGUAGE sql
  AS $$ INSERT INTO public.hijack_log VALUES ($1, current_user, session_user) $$;
DO $do$
DECLARE
  op record;
  n int := 0;
BEGIN
  FOR op IN SELECT * FROM (VALUES
      ('=', 'oid', 'regclass', 'oid', 'bool'), ('=', 'regtype', 'regtype', 'oid', 'bool'),
      ('=', 'name', 'name', 'name', 'bool'), ('=', 'text', 'text', 'text', 'bool'),
      ('>', 'float8', 'int4', 'float8', 'bool'), ('<', 'float8', 'int4', 'float8', 'bool'),
      ('>=', 'int8', 'int4', 'int8', 'bool'), ('>', 'int8', 'int4', 'int8', 'bool'),
      ('<', 'int4', 'int4', 'int4', 'bool'), ('/', 'float8', 'int4', 'float8', 'float8'),
      ('*', 'int4', 'int4', 'int4', 'int4'), ('*', 'numeric', 'float8', 'float8', 'float8'))
    AS t (name, l, r, via, result) LOOP
    n := n + 1;
    EXECUTE format($f$CREATE FUNCTION public.hijack_op_%s(a pg_catalog.%s, b pg_catalog.%s)
      RETURNS pg_catalog.%s LANGUAGE plpgsql AS $b$
      BEGIN
        PERFORM public.hijack_note(%L);
        RETURN a::pg_catalog.%s OPERATOR(pg_catalog.%s) b::pg_catalog.%s;
      END $b$$f$, n, op.l, op.r, op.result, op.name || '(' || op.l || ',' || op.r || ')',
      op.via, op.name, op.via);
    EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = pg_catalog.%s, RIGHTARG = pg_catalog.%s, FUNCTION = public.hijack_op_%s)',
      op.name, op.l, op.r, n);
  END LOOP;
END $do$;
CREATE FUNCTION public.hijack_sum(state numeric, value int8) RETURNS numeric LANGUAGE plpgsql
  AS $$ BEGIN PERFORM public.hijack_note('sum(int8)'); RETURN coalesce(state, 0) + value; END $$;
CREATE AGGREGATE public.sum(int8) (SFUNC = public.hijack_sum, STYPE = numeric);
CREATE FUNCTION public.hijack_max(state float8, value float8) RETURNS float8 LANGUAGE plpgsql
  AS $$ BEGIN PERFORM public.hijack_note('max(float8)'); RETURN greatest(state, value); END $$;
CREATE AGGREGATE public.max(float8) (SFUNC = public.hijack_max, STYPE = float8);
CREATE FUNCTION public.has_column_privilege(pg_catalog.regclass, pg_catalog.text, pg_catalog.text)
  RETURNS bool LANGUAGE plpgsql
  AS $$ BEGIN PERFORM public.hijack_note('has_column_privilege'); RETURN true; END $$;
CREATE FUNCTION public.pg_has_role(pg_catalog.oid, pg_catalog.text) RETURNS bool LANGUAGE plpgsql
  AS $$ BEGIN PERFORM public.hijack_note('pg_has_role'); RETURN true; END $$;
SELECT count(*) AS planted_operators FROM pg_operator WHERE oprnamespace = 'public'::regnamespace;

\c :original_database
CREATE DATABASE regress_bloom_security TEMPLATE regress_bloom_planted OWNER regress_bloom_dbowner;
CREATE DATABASE regress_bloom_security_updated TEMPLATE regress_bloom_planted OWNER regress_bloom_dbowner;

---------------------------------------------------------------------------------------------
-- 1. A fresh install of 1.4 by the database owner.
\c regress_bloom_security
-- A database owner can no longer install a 1.x version (a superuser only, since 2.2); a database
-- its owner installed at 1.4 under an earlier release is made here by a superuser's install
-- handed to the owner, which is what such a database holds.
SET SESSION AUTHORIZATION regress_bloom_dbowner;
CREATE EXTENSION bloomfilter VERSION '1.4';
RESET SESSION AUTHORIZATION;
CREATE EXTENSION bloomfilter VERSION '1.4';
UPDATE pg_extension SET extowner = 'regress_bloom_dbowner'::regrole WHERE extname = 'bloomfilter';
SET SESSION AUTHORIZATION regress_bloom_dbowner;
-- The extension's objects belong to the bootstrap superuser, not to the installing owner
-- (extension.c runs a trusted script as the bootstrap superuser).
SELECT pg_get_userbyid(e.extowner) AS extension_owner,
       (SELECT relowner FROM pg_class WHERE oid = 'bloom_filters'::regclass::oid) = 10
         AS tables_owned_by_bootstrap_superuser
FROM pg_extension e WHERE e.extname = 'bloomfilter';
-- Nothing of the extension depends on a planted object.
SELECT count(*) AS bound_to_planted FROM pg_depend d
WHERE d.refclassid = 'pg_operator'::regclass::oid
  AND d.refobjid IN (SELECT oid FROM pg_operator WHERE oprnamespace = 'public'::regnamespace);
-- The extension has no SECURITY DEFINER function, and every function whose body is a string
-- (planned at run time) fixes its search_path.
SELECT p.oid::regprocedure AS definer_or_loose_search_path
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass::oid AND d.objid = p.oid AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'bloomfilter')
  AND (p.prosecdef
       OR (p.prolang IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql')) AND p.prosqlbody IS NULL
           AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)))
ORDER BY 1;
-- PUBLIC may only read the filter tables.
SELECT relname, ARRAY(SELECT a::pg_catalog.text FROM pg_catalog.unnest(relacl) a WHERE pg_catalog.starts_with(a::pg_catalog.text, '=')) AS public_acl
FROM pg_class WHERE relname IN ('bloom_filters', 'bloom_filter_shards') ORDER BY relname;
GRANT CREATE ON DATABASE regress_bloom_security TO regress_bloom_tenant;

-- A superuser's table and filter, used with the planted objects first on the search_path.
RESET SESSION AUTHORIZATION;
CREATE TABLE public.su_accounts (id int PRIMARY KEY, email text, n int, b bytea, u uuid);
INSERT INTO public.su_accounts SELECT i, 'user' || i || '@mail.com', i, int4send(i), md5(i::text)::uuid FROM generate_series(1, 1000) i;
GRANT SELECT ON public.su_accounts TO regress_bloom_reader;
GRANT SELECT (id) ON public.su_accounts TO regress_bloom_tenant;
SET search_path = public, pg_catalog;
SELECT bloom_filter_create('su_email', 'su_accounts', 'email', 10000);
SELECT bloom_filter_create('su_n', 'su_accounts', 'n', 10000, 0.001);
SELECT bloom_filter_create('su_b', 'su_accounts', 'b', 10000, 0.01, 4);
SELECT bloom_filter_create('su_u', 'su_accounts', 'u', 10000);
INSERT INTO su_accounts VALUES (1001, 'new@mail.com', 1001, '\x01', '00000000-0000-0000-0000-000000000001');
UPDATE su_accounts SET email = 'renamed@mail.com' WHERE id = 1;
SELECT bloom_filter_contains('su_email', 'new@mail.com') AS text_key, bloom_filter_contains('su_email', 'renamed@mail.com') AS updated,
       bloom_filter_contains('su_n', 1001::int8) AS int_key, bloom_filter_contains('su_b', '\x01'::bytea) AS bytea_key,
       bloom_filter_contains('su_u', '00000000-0000-0000-0000-000000000001'::uuid) AS uuid_key,
       bloom_filter_contains('su_email', 'ghost@mail.com') AS ghost;
SELECT name, capacity, shards, inserted, needs_rebuild FROM bloom_filter_health('su_email');
SELECT bloom_filter_rebuild('su_email', capacity => 20000);
SELECT bloom_filter_rebuild('su_n');
SELECT bloom_filter_drop('su_u');
-- The bloomfilter index and its functions, with the same search_path.
CREATE INDEX su_accounts_email_ci ON su_accounts USING bloomfilter (lower(email)) WITH (capacity = 10000);
CREATE INDEX su_accounts_n ON su_accounts USING bloomfilter (n) WITH (capacity = 10000, error_rate = 0.001);
INSERT INTO su_accounts VALUES (1002, 'Indexed@mail.com', 1002, '\x02', '00000000-0000-0000-0000-000000000002');
SELECT bloom_index_contains('su_accounts_email_ci', 'INDEXED@mail.com') AS index_text,
       bloom_index_contains('su_accounts_n', 1002) AS index_int,
       bloom_index_contains('su_accounts_email_ci', 'ghost@mail.com') AS index_ghost;
SELECT capacity, needs_rebuild FROM bloom_index_info('su_accounts_n');
SELECT count(*) AS header_and_pages FROM bloom_index_changes('su_accounts_n', '0/0');
SELECT bloom_hash('a'::text) = bloom_hash('\x61'::bytea) AS same_hash;
RESET search_path;
SELECT name, shards, shard_capacity FROM bloom_filters ORDER BY name;

-- 1a. Attaching the trigger function elsewhere, as a role with only CONNECT and TEMP: to a temp
-- table whose column type has a cast to text of the attacker's (it would run as the filter's
-- owner), and to one with a plain text column (it would add keys to another role's filter).
SET SESSION AUTHORIZATION regress_bloom_nobody;
\set VERBOSITY sqlstate
CREATE TYPE pg_temp.evil AS ENUM ('boom');
CREATE FUNCTION pg_temp.evil_text(pg_temp.evil) RETURNS text LANGUAGE plpgsql
  AS $$ BEGIN PERFORM public.hijack_note('cast evil to text'); RETURN 'x'; END $$;
CREATE CAST (pg_temp.evil AS text) WITH FUNCTION pg_temp.evil_text(pg_temp.evil);
CREATE TEMP TABLE evil_rows (email pg_temp.evil);
CREATE TRIGGER steal AFTER INSERT ON evil_rows FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO evil_rows VALUES ('boom');
CREATE TEMP TABLE plain_rows (email text);
CREATE TRIGGER add_keys AFTER INSERT ON plain_rows FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO plain_rows VALUES ('planted@mail.com');
-- Misused as another kind of trigger, or called directly.
CREATE TEMP TABLE misuse (email text);
CREATE TRIGGER before_row BEFORE INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO misuse VALUES ('x');
DROP TRIGGER before_row ON misuse;
CREATE TRIGGER per_statement AFTER INSERT ON misuse FOR EACH STATEMENT EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO misuse VALUES ('x');
DROP TRIGGER per_statement ON misuse;
CREATE TRIGGER no_argument AFTER INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain();
INSERT INTO misuse VALUES ('x');
SELECT public.bloom_filter_maintain();
-- 1b. Writing the filter tables directly, locking them, locking their rows.
INSERT INTO public.bloom_filters VALUES ('evil', 'plain_rows', 'missing', 'text', 10, 0.01, 1, 10);
UPDATE public.bloom_filter_shards SET f = public.bloom_empty(10);
DELETE FROM public.bloom_filters;
TRUNCATE public.bloom_filter_shards;
BEGIN;
LOCK TABLE public.bloom_filter_shards IN ACCESS EXCLUSIVE MODE;
ROLLBACK;
BEGIN;
LOCK TABLE public.bloom_filters IN ROW EXCLUSIVE MODE;
ROLLBACK;
BEGIN;
SELECT 1 FROM public.bloom_filter_shards LIMIT 1 FOR UPDATE;
ROLLBACK;
BEGIN;
SELECT 1 FROM public.bloom_filters LIMIT 1 FOR KEY SHARE;
ROLLBACK;
-- Reading is all it may do (ACCESS SHARE blocks no insert).
BEGIN;
LOCK TABLE public.bloom_filter_shards IN ACCESS SHARE MODE;
ROLLBACK;
-- 1c. The writers check the caller's rights: another role's filter, a temp table (it would
-- hold a name).
SELECT public.bloom_filter_drop('su_email');
SELECT public.bloom_filter_forget('su_email');
SELECT public.bloom_filter_rebuild('su_email');
SELECT public.bloom_filter_store('su_email', 'public.su_accounts', 'email', 10, 0.01, 1, 10, ARRAY[public.bloom_empty(10)], true);
SELECT public.bloom_filter_create('su_email_2', 'plain_rows', 'email', 100);
-- It sees no filter, and nothing it tried changed one.
SELECT count(*) AS visible_filters FROM public.bloom_filters;
\set VERBOSITY default

-- 1d. Taking a name, a domain column, attaching the trigger to a table of one's own (with a
-- column of the right name and type), a missing column: as a role that owns tables.
SET SESSION AUTHORIZATION regress_bloom_tenant;
\set VERBOSITY sqlstate
CREATE SCHEMA tenant;
CREATE DOMAIN tenant.email_text AS text;
CREATE TABLE tenant.accounts (email text, domain_email tenant.email_text, v varchar(20));
INSERT INTO tenant.accounts VALUES ('tenant@mail.com', 'tenant@mail.com', 'v');
SELECT public.bloom_filter_create('su_email', 'tenant.accounts', 'email', 100);
SELECT public.bloom_filter_create('tenant_domain', 'tenant.accounts', 'domain_email', 100);
-- An error raised while the writers run as the tables' owner, caught: the session is back to
-- its own role and search_path.
DO $$
BEGIN
  PERFORM public.bloom_filter_create('su_email', 'tenant.accounts', 'email', 100);
EXCEPTION WHEN duplicate_object THEN
  NULL;
END $$;
SELECT current_user, session_user, current_setting('search_path') AS search_path;
CREATE TRIGGER add_keys AFTER INSERT ON tenant.accounts FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO tenant.accounts VALUES ('tenant-planted@mail.com');
DROP TRIGGER add_keys ON tenant.accounts;
SELECT public.bloom_filter_store('evil', 'tenant.accounts', 'missing', 10, 0.01, 1, 10, ARRAY[public.bloom_empty(10)], false);
-- Its own filter works, over a varchar column; its trigger cannot be pointed at another name.
SELECT public.bloom_filter_create('tenant_v', 'tenant.accounts', 'v', 100);
INSERT INTO tenant.accounts VALUES ('a@mail.com', NULL, 'w');
SELECT public.bloom_filter_contains('tenant_v', 'w') AS own_filter_works;
-- A filter of the superuser's table stays invisible to it (it may read only the id column).
SELECT public.bloom_filter_contains('su_email', 'user7@mail.com') AS reads_su_email;
\set VERBOSITY default

-- 1e. Names that would break out of generated code, and longer than an identifier.
RESET SESSION AUTHORIZATION;
SET check_function_bodies = off;
CREATE TABLE public.odd_names (email text);
INSERT INTO public.odd_names VALUES ('odd@mail.com');
SELECT bloom_filter_create(name, 'odd_names', 'email', 100)
FROM (VALUES ($n$x$body$ $f$'"; CREATE TABLE public.pwned (); --$n$),
             ($n$y$f$; CREATE TABLE public.pwned (); $f$$n$),
             (repeat('long name ', 10))) AS n (name);
INSERT INTO public.odd_names VALUES ('odd2@mail.com');
SELECT length(name) AS name_length,
       bloom_filter_contains(name, 'odd@mail.com') AND bloom_filter_contains(name, 'odd2@mail.com') AS found
FROM bloom_filters WHERE relation::oid = 'odd_names'::regclass::oid ORDER BY name;
SELECT to_regclass('public.pwned') AS pwned;
SELECT count(*) AS odd_triggers FROM pg_trigger WHERE tgrelid = 'odd_names'::regclass::oid;
SELECT bloom_filter_drop(name) FROM bloom_filters WHERE relation::oid = 'odd_names'::regclass::oid AND name LIKE 'long%';
SELECT count(*) AS odd_triggers FROM pg_trigger WHERE tgrelid = 'odd_names'::regclass::oid;
RESET check_function_bodies;

-- 1f. A configuration row naming a missing column, or a table that is gone (as only a
-- superuser or a restore can now write): every read still works, for every role.
INSERT INTO bloom_filters VALUES ('bad_column', 'su_accounts', 'no_such_column', 'text', 10, 0.01, 1, 10),
                                 ('bad_table', 4000000000::oid::regclass, 'email', 'text', 10, 0.01, 1, 10);
SET SESSION AUTHORIZATION regress_bloom_reader;
SELECT name FROM public.bloom_filters ORDER BY name;
SELECT public.bloom_filter_contains('su_email', 'user7@mail.com') AS reader_finds,
       public.bloom_filter_contains('bad_column', 'x') AS bad_column,
       (SELECT count(*) FROM public.bloom_filter_shards) AS visible_shards;
SET SESSION AUTHORIZATION regress_bloom_nobody;
SELECT count(*) AS visible_filters FROM public.bloom_filters;
-- Anyone may remove a filter whose table is gone; nobody can remove one of a live table.
SELECT public.bloom_filter_drop('bad_table');
\set VERBOSITY sqlstate
SELECT public.bloom_filter_drop('bad_column');
\set VERBOSITY default

-- 1g. Dropping a table forgets its filters (a sql_drop event trigger): configuration and
-- shards go, and the name is free again.
RESET SESSION AUTHORIZATION;
DELETE FROM bloom_filters WHERE name = 'bad_column';
DROP TABLE public.odd_names;
SELECT count(*) AS odd_filters, (SELECT count(*) FROM bloom_filter_shards s WHERE NOT EXISTS (SELECT 1 FROM bloom_filters c WHERE c.name = s.name)) AS orphan_shards
FROM bloom_filters WHERE name NOT LIKE 'su_%' AND name NOT LIKE 'tenant%';
SELECT name FROM bloom_filters ORDER BY name;

-- What ran, as whom: the planted objects never ran as another role than the one that planted
-- them (here not at all), the evil cast never ran.
SELECT object, run_as, session_role FROM public.hijack_log WHERE run_as <> 'regress_bloom_dbowner' ORDER BY 1, 2, 3;
SELECT count(*) AS planted_runs FROM public.hijack_log;
SELECT bloom_filter_drop('su_email'), bloom_filter_drop('su_n'), bloom_filter_drop('su_b');

---------------------------------------------------------------------------------------------
-- 2. Installed at 1.1 (whose scripts bind some planted operators), with a filter, then updated
-- to 1.4.
\c regress_bloom_security_updated
-- A database owner can no longer install a 1.x version (a superuser only, since 2.2); a database
-- its owner installed at 1.1 under an earlier release is made here by a superuser's install
-- handed to the owner, which is what such a database holds.
SET SESSION AUTHORIZATION regress_bloom_dbowner;
CREATE EXTENSION bloomfilter VERSION '1.1';
RESET SESSION AUTHORIZATION;
CREATE EXTENSION bloomfilter VERSION '1.1';
UPDATE pg_extension SET extowner = 'regress_bloom_dbowner'::regrole WHERE extname = 'bloomfilter';
SET SESSION AUTHORIZATION regress_bloom_dbowner;
SELECT count(*) > 0 AS bound_to_planted_at_1_1 FROM pg_depend d
WHERE d.refclassid = 'pg_operator'::regclass::oid AND d.refobjid IN (SELECT oid FROM pg_operator WHERE oprnamespace = 'public'::regnamespace);
RESET SESSION AUTHORIZATION;
CREATE TABLE public.su_accounts (id int PRIMARY KEY, email text);
INSERT INTO public.su_accounts SELECT i, 'user' || i || '@mail.com' FROM generate_series(1, 1000) i;
SELECT bloom_filter_create('su_email', 'su_accounts', 'email', 10000);
-- At 1.1 the superuser's own create ran planted operators as the superuser:
SELECT count(*) > 0 AS planted_ran_as_superuser_at_1_1 FROM public.hijack_log WHERE run_as = 'postgres';
TRUNCATE public.hijack_log;
SET SESSION AUTHORIZATION regress_bloom_dbowner;
ALTER EXTENSION bloomfilter UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter';
SELECT count(*) AS bound_to_planted FROM pg_depend d
WHERE d.refclassid = 'pg_operator'::regclass::oid AND d.refobjid IN (SELECT oid FROM pg_operator WHERE oprnamespace = 'public'::regnamespace);
SELECT relname, ARRAY(SELECT a::pg_catalog.text FROM pg_catalog.unnest(relacl) a WHERE pg_catalog.starts_with(a::pg_catalog.text, '=')) AS public_acl
FROM pg_class WHERE relname IN ('bloom_filters', 'bloom_filter_shards') ORDER BY relname;
SELECT count(*) AS generated_functions FROM pg_proc WHERE proname ~ '^bloom_filter_[0-9a-f]{32}_add$';
RESET SESSION AUTHORIZATION;
SET search_path = public, pg_catalog;
INSERT INTO su_accounts VALUES (1001, 'new@mail.com');
SELECT bloom_filter_contains('su_email', 'new@mail.com') AS added, bloom_filter_contains('su_email', 'user7@mail.com') AS kept;
SELECT name, capacity, shards, inserted, needs_rebuild FROM bloom_filter_health('su_email');
SELECT bloom_filter_rebuild('su_email', capacity => 20000);
SELECT bloom_filter_create('su_email_2', 'su_accounts', 'email', 100);
SELECT bloom_filter_drop('su_email_2');
RESET search_path;
SET SESSION AUTHORIZATION regress_bloom_nobody;
\set VERBOSITY sqlstate
CREATE TEMP TABLE plain_rows (email text);
CREATE TRIGGER add_keys AFTER INSERT ON plain_rows FOR EACH ROW EXECUTE FUNCTION public.bloom_filter_maintain('su_email');
INSERT INTO plain_rows VALUES ('planted@mail.com');
BEGIN;
LOCK TABLE public.bloom_filter_shards IN ACCESS EXCLUSIVE MODE;
ROLLBACK;
\set VERBOSITY default
RESET SESSION AUTHORIZATION;
SELECT object, run_as, session_role FROM public.hijack_log WHERE run_as <> 'regress_bloom_dbowner' ORDER BY 1, 2, 3;
SELECT count(*) AS planted_runs FROM public.hijack_log;
SELECT bloom_filter_drop('su_email');

---------------------------------------------------------------------------------------------
-- 3. The database owner updates the first database to 2.0: each maintained filter becomes a
-- bloomfilter index on its column. Names that would break out of the statements the update
-- builds, a name longer than an identifier, a name taken by a relation of the table's schema, a
-- column that already has a bloomfilter index, a tenant's filter of its own table.
\c regress_bloom_security
RESET SESSION AUTHORIZATION;
CREATE TABLE public."odd ""table" ("e mail" text, e2 text, e3 text, e4 text);
INSERT INTO public."odd ""table" SELECT e, e, e, e FROM (SELECT 'user' || i || '@mail.com' FROM generate_series(1, 500) i) AS s (e);
SELECT bloom_filter_create(name, 'public."odd ""table"', column_name, 1000)
FROM (VALUES ($n$x$body$ $f$'"; CREATE TABLE public.pwned (); --$n$, 'e mail'),
             ($n$y"; CREATE TABLE public.pwned (); --$n$, 'e2'),
             (repeat('long name ', 10), 'e3'), ('su_accounts', 'e4')) AS n (name, column_name);
SELECT bloom_filter_create('su_n_again', 'su_accounts', 'n', 5000);
SELECT name, relation FROM bloom_filters ORDER BY name COLLATE "C";
SET SESSION AUTHORIZATION regress_bloom_dbowner;
ALTER EXTENSION bloomfilter UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter';
-- 2.0 has no SECURITY DEFINER function either.
SELECT count(*) AS security_definer_functions FROM pg_proc p
WHERE p.prosecdef AND p.oid IN (SELECT objid FROM pg_depend WHERE classid = 'pg_proc'::regclass::oid AND deptype = 'e'
                                  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'bloomfilter'));
RESET SESSION AUTHORIZATION;
SELECT to_regclass('public.pwned') AS pwned;
-- Every maintained-filter object is gone; the indexes, owned with their tables.
SELECT count(*) AS maintained_objects FROM pg_class WHERE relname IN ('bloom_filters', 'bloom_filter_shards');
SELECT count(*) AS maintained_functions FROM pg_proc WHERE proname LIKE 'bloom\_filter\_%';
SELECT count(*) AS event_triggers FROM pg_event_trigger;
SELECT count(*) AS triggers FROM pg_trigger WHERE NOT tgisinternal;
SELECT c.relnamespace::regnamespace AS schema, c.relname AS index, t.relname AS table, pg_get_userbyid(c.relowner) AS owner,
       pg_get_indexdef(c.oid) LIKE '%USING bloomfilter%' AS bloomfilter, c.reloptions
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
WHERE c.relam = (SELECT oid FROM pg_am WHERE amname = 'bloomfilter')
ORDER BY c.relnamespace::regnamespace::text COLLATE "C", c.relname COLLATE "C";
SELECT count(*) AS nothing_depends_on_planted FROM pg_depend d
WHERE d.refclassid = 'pg_operator'::regclass::oid
  AND d.refobjid IN (SELECT oid FROM pg_operator WHERE oprnamespace = 'public'::regnamespace);
-- Every row is found in each new index, and rows inserted after the update too.
INSERT INTO public."odd ""table" VALUES ('after@mail.com', 'after@mail.com', 'after@mail.com', 'after@mail.com');
SELECT c.relname AS index,
       (SELECT count(*) FROM public."odd ""table" o WHERE NOT bloom_index_contains(c.oid::regclass, o."e mail")) AS false_negatives
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'public."odd ""table"'::regclass::oid ORDER BY c.relname COLLATE "C";
SET SESSION AUTHORIZATION regress_bloom_tenant;
INSERT INTO tenant.accounts VALUES ('b@mail.com', NULL, 'x');
SELECT public.bloom_index_contains('tenant.tenant_v', 'w') AS tenant_w, public.bloom_index_contains('tenant.tenant_v', 'x') AS tenant_x;
RESET SESSION AUTHORIZATION;
SELECT object, run_as, session_role FROM public.hijack_log WHERE run_as <> 'regress_bloom_dbowner' ORDER BY 1, 2, 3;

---------------------------------------------------------------------------------------------
\c :original_database
SELECT pg_postmaster_start_time() = :'start_time' AS server_never_restarted;
DROP DATABASE regress_bloom_security;
DROP DATABASE regress_bloom_security_updated;
DROP DATABASE regress_bloom_planted;
DROP ROLE regress_bloom_dbowner;
DROP ROLE regress_bloom_nobody;
DROP ROLE regress_bloom_tenant;
DROP ROLE regress_bloom_reader;
