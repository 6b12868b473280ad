-- A trusted extension: a database owner installs and uses it without superuser rights, and the
-- maintained filters of one role's table cannot be read or changed by roles without rights on it.
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
SELECT bloom_filter_create('users_email', 'users', 'email', 10000);
SELECT bloom_contains(bloom_agg(email), 'user7@mail.com') AS plain_functions_work FROM users;
GRANT SELECT, INSERT ON users TO regress_bloom_app;
GRANT USAGE ON SEQUENCE users_id_seq TO regress_bloom_app;

-- The application role signs users up: the trigger adds as the table's owner.
SET SESSION AUTHORIZATION regress_bloom_app;
INSERT INTO users (email) VALUES ('app@mail.com');
SELECT bloom_filter_contains('users_email', 'app@mail.com') AS app_added,
       bloom_filter_contains('users_email', 'user7@mail.com') AS user7;
-- It may read the filter but not change it behind the trigger's back.
UPDATE bloom_filter_shards SET f = bloom_empty(10);
DELETE FROM bloom_filter_shards;
SELECT count(*) AS visible_shards FROM bloom_filter_shards;
SELECT bloom_filter_drop('users_email');
SELECT bloom_filter_rebuild('users_email');

-- A role without rights on the table sees no filter at all.
SET SESSION AUTHORIZATION regress_bloom_other;
SELECT count(*) AS visible_filters FROM bloom_filters;
SELECT bloom_filter_contains('users_email', 'app@mail.com') AS other_sees;
SELECT bloom_filter_create('users_email_copy', 'users', 'email', 100);

-- The functions do not depend on the caller's search_path.
SET SESSION AUTHORIZATION regress_bloom_owner;
SET search_path = pg_temp;
INSERT INTO public.users (email) VALUES ('late@mail.com');
SELECT public.bloom_filter_contains('users_email', 'late@mail.com') AS found_with_empty_search_path;
SELECT public.bloom_filter_rebuild('users_email', capacity => 20000);
SELECT capacity, shards FROM public.bloom_filter_health('users_email');
RESET search_path;
SELECT bloom_filter_drop('users_email');
DROP EXTENSION bloomfilter;

\c :original_database
DROP DATABASE regress_bloom_privileges;
DROP ROLE regress_bloom_owner;
DROP ROLE regress_bloom_app;
DROP ROLE regress_bloom_other;
