-- The signup example (test/examples/signup.sql): check the filter, go to the unique index only
-- when it says "probably present", insert. In a schema of its own.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
CREATE SCHEMA regress_signup;
SET search_path = regress_signup, public;
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i;
INSERT INTO users (email) VALUES ('taken@mail.com');
-- From the source tree, wherever the suite runs (pg_regress sets PG_ABS_SRCDIR).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/examples/signup.sql
\i :abs_srcdir/sql/include/helpers.sql
CALL sign_up('fresh@mail.com');
CALL sign_up_single('fresh-single@mail.com');
CALL sign_up_sharded('fresh-sharded@mail.com');
SELECT pg_temp.error_of($$CALL sign_up('taken@mail.com')$$);
SELECT pg_temp.error_of($$CALL sign_up_single('taken@mail.com')$$);
SELECT pg_temp.error_of($$CALL sign_up_sharded('user7@mail.com')$$);
-- The index holds every row, whichever procedure inserted it; each row-held filter knows only
-- the emails its own procedure added: the sharded one has not seen fresh@mail.com, so the unique
-- index, still the source of truth, rejects it.
SELECT pg_temp.error_of($$CALL sign_up_sharded('fresh@mail.com')$$);
SELECT email, bloom_index_contains('users_email_bloom', email) AS indexed,
       bloom_contains((SELECT f FROM email_filter), email) AS single,
       bloom_contains((SELECT f FROM email_filter_shards WHERE shard = bloom_shard(email, 64)), email) AS sharded
FROM users WHERE id > 1000 OR email = 'user7@mail.com' ORDER BY id;
SELECT count(*) AS false_negatives FROM users WHERE NOT bloom_index_contains('users_email_bloom', email);
SELECT bloom_index_contains('users_email_bloom', 'ghost@mail.com') AS ghost;
RESET search_path;
DROP SCHEMA regress_signup CASCADE;
