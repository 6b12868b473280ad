-- A trusted extension: a database owner installs and uses it without superuser rights, and the
-- bloomfilter index of one role's table cannot be read or changed by roles without rights on it.
-- The roles act through SET SESSION AUTHORIZATION, not new connections, so the test needs no
-- password or trust authentication for them (a packaged cluster's peer authentication works).
\set original_database :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_bloom_privileges;
DROP ROLE IF EXISTS regress_bloom_owner;
DROP ROLE IF EXISTS regress_bloom_app;
DROP ROLE IF EXISTS regress_bloom_other;
RESET client_min_messages;
CREATE ROLE regress_bloom_owner LOGIN;
CREATE ROLE regress_bloom_app LOGIN;
CREATE ROLE regress_bloom_other LOGIN;
CREATE DATABASE regress_bloom_privileges OWNER regress_bloom_owner;

\c regress_bloom_privileges
SET SESSION AUTHORIZATION regress_bloom_owner;
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
CREATE EXTENSION bloomfilter;
SELECT extversion, pg_get_userbyid(extowner) AS owner FROM pg_extension WHERE extname = 'bloomfilter';
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 10000);
SELECT bloom_contains(bloom_agg(email), 'user7@mail.com') AS plain_functions_work FROM users;
GRANT SELECT, INSERT ON users TO regress_bloom_app;
GRANT USAGE ON SEQUENCE users_id_seq TO regress_bloom_app;

-- The application role signs users up: PostgreSQL adds each key to the index.
SET SESSION AUTHORIZATION regress_bloom_app;
INSERT INTO users (email) VALUES ('app@mail.com');
SELECT bloom_index_contains('users_email_bloom', 'app@mail.com') AS app_added,
       bloom_index_contains('users_email_bloom', 'user7@mail.com') AS user7;
-- It may check the index but not change or rebuild it.
\set VERBOSITY sqlstate
ALTER INDEX users_email_bloom SET (capacity = 10);
REINDEX INDEX users_email_bloom;
DROP INDEX users_email_bloom;

-- A role without rights on the table may not check it.
SET SESSION AUTHORIZATION regress_bloom_other;
SELECT bloom_index_contains('users_email_bloom', 'app@mail.com') AS other_sees;
SELECT bloom_index_filter('users_email_bloom') IS NOT NULL AS other_reads;
CREATE INDEX ON users USING bloomfilter (email);
\set VERBOSITY default

-- The functions do not depend on the caller's search_path; the owner grows the index.
SET SESSION AUTHORIZATION regress_bloom_owner;
SET search_path = pg_temp;
INSERT INTO public.users (email) VALUES ('late@mail.com');
SELECT public.bloom_index_contains('public.users_email_bloom', 'late@mail.com') AS found_with_empty_search_path;
ALTER INDEX public.users_email_bloom SET (capacity = 20000);
REINDEX INDEX CONCURRENTLY public.users_email_bloom;
SELECT capacity, needs_rebuild FROM public.bloom_index_info('public.users_email_bloom');
RESET search_path;
DROP TABLE users;
DROP EXTENSION bloomfilter;

\c :original_database
DROP DATABASE regress_bloom_privileges;
DROP ROLE regress_bloom_owner;
DROP ROLE regress_bloom_app;
DROP ROLE regress_bloom_other;
