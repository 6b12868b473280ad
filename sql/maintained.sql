-- Maintained filters of 1.x (2.0 turns each into a bloomfilter index): a database not yet
-- updated keeps them, and the library still serves them. Built from a table, kept current by a
-- trigger, checked, rebuilt, dropped; in a database of its own at version 1.4.
\set original_database :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_bloom_maintained;
RESET client_min_messages;
CREATE DATABASE regress_bloom_maintained;
\c regress_bloom_maintained
CREATE EXTENSION bloomfilter VERSION '1.4';

CREATE TABLE accounts (id bigserial PRIMARY KEY, email text UNIQUE, note text);
INSERT INTO accounts (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i;
INSERT INTO accounts (email) VALUES (NULL);

SELECT bloom_filter_create('accounts_email', 'accounts', 'email', 20000);
SELECT name, relation, column_name, key_type, capacity, error_rate, shards, shard_capacity FROM bloom_filters;
SELECT count(*) AS shard_rows, max(pg_column_size(f)) < 2000 AS shards_inline FROM bloom_filter_shards;

-- Built from the existing rows: all found (NULL emails are skipped).
SELECT count(*) AS false_negatives FROM accounts WHERE email IS NOT NULL AND NOT bloom_filter_contains('accounts_email', email);
SELECT bloom_filter_contains('accounts_email', 'user7@mail.com') AS user7, bloom_filter_contains('accounts_email', 'ghost@mail.com') AS ghost;

-- Kept current: inserts, also multi-row ones, and updates of the column.
INSERT INTO accounts (email) VALUES ('new1@mail.com');
INSERT INTO accounts (email) SELECT 'bulk' || i || '@mail.com' FROM generate_series(1, 100) i;
UPDATE accounts SET email = 'renamed@mail.com' WHERE email = 'user1@mail.com';
UPDATE accounts SET note = 'no change to email' WHERE email = 'user2@mail.com';
SELECT bloom_filter_contains('accounts_email', 'new1@mail.com') AS inserted,
       bloom_filter_contains('accounts_email', 'bulk100@mail.com') AS bulk_inserted,
       bloom_filter_contains('accounts_email', 'renamed@mail.com') AS updated;
SELECT count(*) AS false_negatives FROM accounts WHERE email IS NOT NULL AND NOT bloom_filter_contains('accounts_email', email);

-- A row inserted earlier in the same transaction is found; a rolled-back one leaves no trace.
BEGIN;
INSERT INTO accounts (email) VALUES ('pending@mail.com');
SELECT bloom_filter_contains('accounts_email', 'pending@mail.com') AS found_in_same_transaction;
ROLLBACK;
SELECT bloom_filter_contains('accounts_email', 'pending@mail.com') AS found_after_rollback;
SELECT sum(inserted) AS inserted FROM bloom_filter_shards, bloom_info(f);

-- Health against the target.
SELECT name, capacity, error_rate, shards, inserted, round(estimated_count) AS estimated_count,
       estimated_error_rate < error_rate AS within_target, needs_rebuild
FROM bloom_filter_health('accounts_email');

-- Outgrown: more keys than capacity asks for a rebuild; the rebuild resizes and re-shards.
INSERT INTO accounts (email) SELECT 'more' || i || '@mail.com' FROM generate_series(1, 20000) i;
SELECT needs_rebuild, round(estimated_count) > capacity AS over_capacity FROM bloom_filter_health('accounts_email');
SELECT bloom_filter_rebuild('accounts_email', capacity => 100000);
SELECT capacity, shards, needs_rebuild, estimated_error_rate < error_rate AS within_target FROM bloom_filter_health('accounts_email');
SELECT count(*) AS false_negatives FROM accounts WHERE email IS NOT NULL AND NOT bloom_filter_contains('accounts_email', email);
INSERT INTO accounts (email) VALUES ('after-rebuild@mail.com');
SELECT bloom_filter_contains('accounts_email', 'after-rebuild@mail.com') AS added_after_rebuild;

-- After deletes a rebuild drops the deleted keys (here all the "more" rows).
DELETE FROM accounts WHERE email LIKE 'more%';
SELECT bloom_filter_rebuild('accounts_email');
SELECT inserted FROM bloom_filter_health('accounts_email');

-- Other key types: a bigint column.
CREATE TABLE orders (order_no int PRIMARY KEY);
INSERT INTO orders SELECT generate_series(1, 1000);
SELECT bloom_filter_create('order_numbers', 'orders', 'order_no', 10000, 0.001, 8);
INSERT INTO orders VALUES (5000);
SELECT bloom_filter_contains('order_numbers', 5000::bigint) AS new_order, bloom_filter_contains('order_numbers', 999::bigint) AS old_order,
       bloom_filter_contains('order_numbers', 123456::bigint) AS absent;
SELECT name, key_type, shards FROM bloom_filters ORDER BY name;

-- A partitioned table: the triggers fire on its partitions, whatever their column order.
CREATE TABLE events (id int, tag text) PARTITION BY RANGE (id);
CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (0) TO (1000);
CREATE TABLE events_high (tag text, id int);
ALTER TABLE events ATTACH PARTITION events_high FOR VALUES FROM (1000) TO (2000);
INSERT INTO events SELECT i, 'tag' || i FROM generate_series(1, 1500) i;
SELECT bloom_filter_create('event_tags', 'events', 'tag', 10000);
INSERT INTO events VALUES (5, 'low-new'), (1500, 'high-new');
UPDATE events SET tag = 'high-renamed' WHERE id = 1400;
SELECT bloom_filter_contains('event_tags', 'low-new') AS low, bloom_filter_contains('event_tags', 'high-new') AS high,
       bloom_filter_contains('event_tags', 'high-renamed') AS renamed,
       (SELECT count(*) FROM events WHERE NOT bloom_filter_contains('event_tags', tag)) AS false_negatives;
SELECT bloom_filter_drop('event_tags');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgfoid = 'bloom_filter_maintain()'::regprocedure::oid
  AND tgrelid IN ('events'::regclass::oid, 'events_low'::regclass::oid, 'events_high'::regclass::oid);
DROP TABLE events;

-- Errors.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'accounts', 'missing', 100)$$);
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'accounts', 'note', 0)$$);
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'accounts', 'note', 100, 2)$$);
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'accounts', 'note', 100, 0.01, 0)$$);
CREATE TABLE dates (d date);
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'dates', 'd', 100)$$);
SELECT pg_temp.error_of($$SELECT bloom_filter_create('accounts_email', 'accounts', 'email', 100)$$);
CREATE VIEW accounts_view AS SELECT * FROM accounts;
SELECT pg_temp.error_of($$SELECT bloom_filter_create('x', 'accounts_view', 'email', 100)$$);
DROP VIEW accounts_view;
SELECT pg_temp.error_of($$SELECT bloom_filter_rebuild('nope')$$);
SELECT pg_temp.error_of($$SELECT bloom_filter_drop('nope')$$);
SELECT bloom_filter_contains('nope', 'x') IS NULL AS unknown_filter_is_null;

-- Drop removes shards, triggers and the trigger function.
SELECT bloom_filter_drop('accounts_email');
SELECT bloom_filter_drop('order_numbers');
SELECT count(*) AS filters FROM bloom_filters;
SELECT count(*) AS shards FROM bloom_filter_shards;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgname LIKE 'bloom_filter_%';
SELECT count(*) AS trigger_functions FROM pg_proc WHERE proname ~ '^bloom_filter_[0-9a-f]{32}_add$';
INSERT INTO accounts (email) VALUES ('after-drop@mail.com');

\c :original_database
DROP DATABASE regress_bloom_maintained;
