-- Multicolumn bloomfilter indexes: the keys of the unique constraints signup tables have,
-- (tenant_id, email), (org_id, lower(username)), (provider, subject). A row's key columns are
-- hashed into one composite key (docs/format.md, "Composite keys"); a check takes the values in
-- column order. A row with a NULL key column is not indexed, as a unique constraint ignores it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP SCHEMA IF EXISTS regress_bloom_cc CASCADE;
DROP ROLE IF EXISTS regress_bloom_cc_owner;
DROP ROLE IF EXISTS regress_bloom_cc_reader;
RESET client_min_messages;
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql
CREATE SCHEMA regress_bloom_cc;
SET search_path = regress_bloom_cc, public;

SELECT obj_description(oid, 'pg_am') AS access_method FROM pg_am WHERE amname = 'bloomfilter';

-- UNIQUE (tenant_id, email): 20 tenants, 100 emails each, 'x' in tenant t1 only.
CREATE TABLE accounts (id bigserial PRIMARY KEY, tenant_id text NOT NULL, email text NOT NULL,
                       UNIQUE (tenant_id, email));
INSERT INTO accounts (tenant_id, email)
  SELECT 't' || t, 'user' || i || '@mail.com' FROM generate_series(1, 20) t, generate_series(1, 100) i;
INSERT INTO accounts (tenant_id, email) VALUES ('t1', 'x');
CREATE INDEX accounts_bloom ON accounts USING bloomfilter (tenant_id, email)
  WITH (capacity = 10000, error_rate = 0.01, expansion = 0);
\d accounts
-- Every row's pair is present.
SELECT count(*) AS rows, count(*) FILTER (WHERE NOT bloom_index_contains('accounts_bloom', tenant_id, email)) AS false_negatives
FROM accounts;
-- ('t1', 'x') is present, ('t2', 'x') absent: the tenant is part of the key. Literal values,
-- the index by name (text) and by regclass.
SELECT bloom_index_contains('accounts_bloom', 't1', 'x') AS t1_x,
       bloom_index_contains('accounts_bloom', 't2', 'x') AS t2_x,
       bloom_index_contains('accounts_bloom'::regclass, 't1', 'x') AS t1_x_regclass,
       bloom_index_contains('accounts_bloom'::regclass, 't2', 'x') AS t2_x_regclass,
       bloom_index_contains('accounts_bloom', 'x', 't1') AS swapped,
       bloom_index_contains_key('accounts_bloom', 't1', 'x') AS t1_x_key,
       bloom_index_contains_key('accounts_bloom'::regclass, 't2'::varchar, 'x'::text) AS t2_x_key;
-- Absent pairs: each email in another tenant's name; about 1% may answer true.
SELECT count(*) FILTER (WHERE bloom_index_contains('accounts_bloom', 'u' || t, 'user' || i || '@mail.com')) < 20 AS few_false_positives
FROM generate_series(1, 20) t, generate_series(1, 100) i;
-- A NULL value gives NULL (no row with a NULL key column is indexed).
SELECT bloom_index_contains('accounts_bloom', NULL, 'x') AS null_tenant,
       bloom_index_contains('accounts_bloom', 't1', NULL::text) AS null_email;
-- REINDEX sets the same bits (the filter without its header).
SELECT substring(bloom_index_filter('accounts_bloom')::bytea FROM 37) AS before_bits \gset
REINDEX INDEX accounts_bloom;
SELECT substring(bloom_index_filter('accounts_bloom')::bytea FROM 37) = :'before_bits'::bytea AS same_bits_after_reindex;

-- How the calls resolve: literal values take the composite forms ("any"), the one-column calls
-- the same functions as before.
CREATE VIEW resolved AS SELECT
  bloom_index_contains('accounts_bloom', 't1', 'x') AS a,
  bloom_index_contains('accounts_bloom', 42, 'a@x.com') AS b,
  bloom_index_contains_key('accounts_bloom', 't1', 'x') AS c,
  bloom_index_contains('accounts_bloom', 'x') AS d,
  bloom_index_contains('accounts_bloom', 42) AS e,
  bloom_index_contains('accounts_bloom'::regclass, 'x') AS f,
  bloom_hash(42, 'a@x.com') AS g;
SELECT pg_get_viewdef('resolved'::regclass, true);
SELECT DISTINCT p.oid::regprocedure AS resolved_to
FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_proc p ON p.oid = d.refobjid
WHERE r.ev_class = 'resolved'::regclass AND d.refclassid = 'pg_proc'::regclass ORDER BY 1;
DROP VIEW resolved;

-- bloom_hash of several values: the golden vectors' composite hashes (test/vectors/golden.json).
SELECT bloom_hash('t1', 'x') AS t1_x, bloom_hash('t2', 'x') AS t2_x,
       bloom_hash(42::bigint, 'a@x.com') AS bigint_42, bloom_hash(42, 'a@x.com'::text) AS int_42,
       bloom_hash(42::smallint, 'a@x.com'::varchar) AS smallint_42,
       bloom_hash('42', 'x') AS text_42, bloom_hash(42, 'x') AS int_42_x,
       bloom_hash('ab', 'c') AS ab_c, bloom_hash('a', 'bc') AS a_bc,
       bloom_hash('123e4567-e89b-12d3-a456-426614174000'::uuid, -1, '\xff00'::bytea) AS three,
       bloom_hash('', 1, 'abcdef', 3, 'abcdefghijkl', 5, 'abcdefghijklmnopqr', 7) AS eight;
SELECT bloom_hash('abc') AS one_value, bloom_hash(NULL::text, 'x') AS with_null;
SELECT pg_temp.error_of($$SELECT bloom_hash(1.5, 'x')$$) AS numeric_value;

-- The wrong number or type of values is an error, never an answer.
CREATE TABLE one_column (email text);
CREATE INDEX one_column_bloom ON one_column USING bloomfilter (email) WITH (capacity = 100);
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 't1')$$) AS one_value;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 't1', 'x', 'y')$$) AS three_values;
SELECT pg_temp.error_of($$SELECT bloom_index_contains_key('accounts_bloom'::regclass, 't1'::text)$$) AS one_key;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('one_column_bloom', 'a', 'b')$$) AS two_for_one;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 1, 'x')$$) AS integer_tenant;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 't1', 1.5)$$) AS numeric_email;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 't1', '123e4567-e89b-12d3-a456-426614174000'::uuid)$$) AS uuid_email;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('accounts_bloom', 't1', ARRAY['x'])$$) AS array_email;
-- The one-column forms on a one-column index are unchanged.
SELECT bloom_index_contains('one_column_bloom', 'a') AS one_column_absent;

-- (org_id, lower(username)): the value of an expression's column is given, the expression
-- applied as for a one-column expression index; bloom_index_contains_key takes the keys.
CREATE TABLE users (id bigserial PRIMARY KEY, org_id bigint NOT NULL, username text NOT NULL);
CREATE UNIQUE INDEX users_unique ON users (org_id, lower(username));
INSERT INTO users (org_id, username)
  SELECT o, CASE WHEN i % 2 = 0 THEN 'User' || i ELSE 'user' || i END
  FROM generate_series(1, 10) o, generate_series(1, 100) i;
INSERT INTO users (org_id, username) VALUES (42, 'A@X.com');
CREATE INDEX users_bloom ON users USING bloomfilter (org_id, lower(username)) WITH (capacity = 5000);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('users_bloom', org_id, username)) AS false_negatives,
       count(*) FILTER (WHERE NOT bloom_index_contains('users_bloom', org_id, upper(username))) AS any_case_false_negatives,
       count(*) FILTER (WHERE NOT bloom_index_contains_key('users_bloom', org_id, lower(username))) AS key_false_negatives
FROM users;
SELECT bloom_index_contains('users_bloom', 42, 'a@x.com') AS literal_42,
       bloom_index_contains('users_bloom', 42::smallint, 'A@X.COM') AS smallint_42,
       bloom_index_contains('users_bloom', 43, 'a@x.com') AS org_43,
       bloom_index_contains_key('users_bloom', 42, 'a@x.com') AS key_42,
       bloom_index_contains_key('users_bloom', 42, 'A@X.com') AS key_42_not_lowered;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('users_bloom', 'forty-two', 'a@x.com')$$) AS bad_literal;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('users_bloom', 'x'::text, 'a@x.com')$$) AS text_org;
SELECT bloom_index_verify('users_bloom') AS users_verified;
-- The expression first.
CREATE INDEX users_lower_first ON users USING bloomfilter (lower(username), org_id) WITH (capacity = 5000);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('users_lower_first', username, org_id)) AS false_negatives
FROM users;
SELECT bloom_index_contains('users_lower_first', 'a@X.com', 42) AS lower_first,
       bloom_index_contains('users_lower_first', 'a@X.com', 43) AS lower_first_43;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('users_lower_first', 42, 'a@X.com')$$) AS swapped;
-- An expression of two columns: only its key can be checked.
CREATE INDEX users_pair ON users USING bloomfilter (org_id, (org_id::text || '/' || username)) WITH (capacity = 5000);
SELECT pg_temp.error_of($$SELECT bloom_index_contains('users_pair', 42, 'A@X.com')$$) AS two_column_expression;
SELECT bloom_index_contains_key('users_pair', 42, '42/A@X.com') AS pair_key;

-- (provider, subject), and three columns.
CREATE TABLE identities (provider text NOT NULL, subject text NOT NULL, user_id bigint,
                         UNIQUE (provider, subject));
INSERT INTO identities
  SELECT p, (1000000 + i)::text, i FROM unnest(ARRAY['google', 'github', 'apple']) p, generate_series(1, 500) i;
CREATE INDEX identities_bloom ON identities USING bloomfilter (provider, subject);
CREATE INDEX identities_three ON identities USING bloomfilter (provider, subject, user_id);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('identities_bloom', provider, subject)) AS false_negatives,
       count(*) FILTER (WHERE NOT bloom_index_contains('identities_three', provider, subject, user_id)) AS three_false_negatives
FROM identities;
SELECT bloom_index_contains('identities_bloom', 'google', '1000007') AS google,
       bloom_index_contains('identities_bloom', 'gitlab', '1000007') AS gitlab,
       bloom_index_contains('identities_three', 'apple', '1000007', 7) AS three,
       bloom_index_contains('identities_three', 'apple', '1000007', 8) AS three_other_user;
-- A NULL key column: the row is not indexed (the build adds the other rows' keys).
INSERT INTO identities VALUES ('apple', '2000007', NULL);
SELECT inserted FROM bloom_index_info('identities_three');
REINDEX INDEX identities_three;
SELECT inserted, (SELECT count(*) FROM identities) AS rows FROM bloom_index_info('identities_three');
SELECT bloom_index_verify('identities_three') AS verified;
-- Eight key columns at most.
CREATE TABLE wide (c1 int, c2 int, c3 int, c4 int, c5 int, c6 int, c7 int, c8 int, c9 int);
INSERT INTO wide VALUES (1, 2, 3, 4, 5, 6, 7, 8, 9);
CREATE INDEX wide_eight ON wide USING bloomfilter (c1, c2, c3, c4, c5, c6, c7, c8) WITH (capacity = 100);
SELECT bloom_index_contains('wide_eight', 1, 2, 3, 4, 5, 6, 7, 8) AS eight,
       bloom_index_contains('wide_eight', 1, 2, 3, 4, 5, 6, 7, 9) AS eight_other;
SELECT pg_temp.error_of($$CREATE INDEX wide_nine ON wide USING bloomfilter (c1, c2, c3, c4, c5, c6, c7, c8, c9)$$) AS nine;

-- Growth past a layer: inserts set the same composite keys the build does.
CREATE TABLE signups (tenant_id bigint NOT NULL, email text NOT NULL);
CREATE INDEX signups_bloom ON signups USING bloomfilter (tenant_id, email)
  WITH (capacity = 1000, expansion = 2);
INSERT INTO signups SELECT i % 50, 'user' || i || '@mail.com' FROM generate_series(1, 6000) i;
SELECT count(*) > 1 AS grew FROM bloom_index_layers('signups_bloom');
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('signups_bloom', tenant_id, email)) AS false_negatives
FROM signups;
SELECT bloom_index_verify('signups_bloom') AS verified;
-- Inserted one by one, built at once, built sorted: the same bits for a fixed size.
CREATE TABLE signups_fixed (tenant_id int NOT NULL, email text NOT NULL);
CREATE INDEX signups_fixed_bloom ON signups_fixed USING bloomfilter (tenant_id, email)
  WITH (capacity = 1000000, expansion = 0);
INSERT INTO signups_fixed SELECT i % 50, 'user' || i || '@mail.com' FROM generate_series(1, 6000) i;
SELECT md5(substring(bloom_index_filter('signups_fixed_bloom')::bytea FROM 37)) AS inserted_bits \gset
REINDEX INDEX signups_fixed_bloom;
SELECT md5(substring(bloom_index_filter('signups_fixed_bloom')::bytea FROM 37)) = :'inserted_bits' AS built_in_memory_same;
SET maintenance_work_mem = '1MB';
REINDEX INDEX signups_fixed_bloom;
RESET maintenance_work_mem;
SELECT md5(substring(bloom_index_filter('signups_fixed_bloom')::bytea FROM 37)) = :'inserted_bits' AS built_sorted_same;
-- An int column's values hash as bigint: the two tables' filters agree on every pair.
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('signups_fixed_bloom', tenant_id, email)) AS int_false_negatives
FROM signups;
-- No int column holds a value out of its range.
SELECT bloom_index_contains('signups_fixed_bloom', 4294967296 + 1, 'user1@mail.com') AS out_of_range;

-- A domain column.
CREATE DOMAIN email_address AS text CHECK (VALUE LIKE '%@%');
CREATE TABLE members (tenant_id bigint NOT NULL, email email_address NOT NULL, UNIQUE (tenant_id, email));
INSERT INTO members SELECT i % 7, 'member' || i || '@mail.com' FROM generate_series(1, 300) i;
CREATE INDEX members_bloom ON members USING bloomfilter (tenant_id, email) WITH (capacity = 1000);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('members_bloom', tenant_id, email)) AS false_negatives
FROM members;
SELECT bloom_index_contains('members_bloom', 3, 'member3@mail.com') AS literal,
       bloom_index_contains('members_bloom', 3, 'member3@mail.com'::email_address) AS domain_value,
       bloom_index_contains('members_bloom', 4, 'member3@mail.com') AS other_tenant;

-- Partitioned tables: by the first key column (a check reads the partition the value routes
-- to), and by another column (every partition's index is asked).
CREATE TABLE tenants_list (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email))
  PARTITION BY LIST (tenant_id);
CREATE TABLE tenants_list_a PARTITION OF tenants_list FOR VALUES IN ('t1', 't2', 't3');
CREATE TABLE tenants_list_b PARTITION OF tenants_list FOR VALUES IN ('t4', 't5');
-- Columns in another order than the parent's.
CREATE TABLE tenants_list_c (email text NOT NULL, tenant_id text NOT NULL);
ALTER TABLE tenants_list ATTACH PARTITION tenants_list_c FOR VALUES IN ('t6', 't7');
CREATE INDEX tenants_list_bloom ON tenants_list USING bloomfilter (tenant_id, email) WITH (capacity = 1000);
INSERT INTO tenants_list SELECT 't' || t, 'user' || i || '@mail.com' FROM generate_series(1, 7) t, generate_series(1, 100) i;
INSERT INTO tenants_list VALUES ('t1', 'x');
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('tenants_list_bloom', tenant_id, email)) AS false_negatives
FROM tenants_list;
SELECT bloom_index_contains('tenants_list_bloom', 't1', 'x') AS t1_x,
       bloom_index_contains('tenants_list_bloom', 't2', 'x') AS t2_x,
       bloom_index_contains('tenants_list_bloom', 't9', 'x') AS no_partition,
       bloom_index_contains_key('tenants_list_bloom', 't1', 'x') AS t1_x_key;
SELECT bloom_index_verify('tenants_list_bloom') AS verified;
CREATE TABLE tenants_hash (tenant_id bigint NOT NULL, email text NOT NULL) PARTITION BY HASH (email);
CREATE TABLE tenants_hash_0 PARTITION OF tenants_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE tenants_hash_1 PARTITION OF tenants_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE tenants_hash_2 PARTITION OF tenants_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2)
  PARTITION BY RANGE (tenant_id);
CREATE TABLE tenants_hash_2_low PARTITION OF tenants_hash_2 FOR VALUES FROM (MINVALUE) TO (5);
CREATE TABLE tenants_hash_2_high PARTITION OF tenants_hash_2 FOR VALUES FROM (5) TO (MAXVALUE);
CREATE INDEX tenants_hash_bloom ON tenants_hash USING bloomfilter (tenant_id, lower(email)) WITH (capacity = 1000);
INSERT INTO tenants_hash SELECT t, 'User' || i || '@mail.com' FROM generate_series(1, 10) t, generate_series(1, 100) i;
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('tenants_hash_bloom', tenant_id, email)) AS false_negatives,
       count(*) FILTER (WHERE NOT bloom_index_contains_key('tenants_hash_bloom', tenant_id, lower(email))) AS key_false_negatives
FROM tenants_hash;
SELECT bloom_index_contains('tenants_hash_bloom', 7, 'USER7@mail.com') AS t7,
       bloom_index_contains('tenants_hash_bloom', 70, 'USER7@mail.com') AS t70,
       bloom_index_contains('tenants_hash_bloom', 3000000000, 'USER7@mail.com') AS t3000000000;
SELECT bloom_index_verify('tenants_hash_bloom') AS verified;
-- Routing by any plain key column, level by level: the partitions' indexes a check locked show
-- which it read (the first key column, the second, an expression column's table column: none).
CREATE FUNCTION checked(index regclass, tenant bigint, email text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found bool := bloom_index_contains(index, tenant, email);
BEGIN
  RETURN found || ' ' || array_to_string(ARRAY(
    SELECT c.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relkind = 'i'
      AND c.relnamespace = 'regress_bloom_cc'::regnamespace AND c.relname LIKE 'routed%' ORDER BY 1), ',');
END $$;
CREATE TABLE routed (tenant_id bigint NOT NULL, email text NOT NULL) PARTITION BY HASH (email);
SELECT format('CREATE TABLE routed_%s PARTITION OF routed FOR VALUES WITH (MODULUS 4, REMAINDER %s)%s', r, r,
              CASE WHEN r = 3 THEN ' PARTITION BY LIST (tenant_id)' ELSE '' END)
FROM generate_series(0, 3) r \gexec
CREATE TABLE routed_3_low PARTITION OF routed_3 FOR VALUES IN (1, 2, 3, 4, 5);
CREATE TABLE routed_3_high PARTITION OF routed_3 DEFAULT;
INSERT INTO routed SELECT t, 'user' || i || '@mail.com' FROM generate_series(1, 10) t, generate_series(1, 200) i;
CREATE INDEX routed_bloom ON routed USING bloomfilter (tenant_id, email) WITH (capacity = 1000);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('routed_bloom', tenant_id, email)) AS false_negatives
FROM routed;
-- Each check in its own statement (a statement planned over the table locks every index).
-- Each email's partition, and under routed_3 each tenant's: one leaf's index read.
SELECT tableoid::regclass AS partition FROM routed WHERE (tenant_id, email) IN ((1, 'user1@mail.com'), (9, 'user1@mail.com'), (1, 'user3@mail.com')) ORDER BY tenant_id, email;
SELECT checked('routed_bloom', 1, 'user1@mail.com') AS low;
SELECT checked('routed_bloom', 9, 'user1@mail.com') AS high;
SELECT checked('routed_bloom', 1, 'user3@mail.com') AS other_email;
SELECT checked('routed_bloom', 9, 'ghost@mail.com') AS ghost;
-- A pair inserted after a check that found it absent, in the partition it routes to.
SELECT checked('routed_bloom', 1, 'x') AS before_insert;
INSERT INTO routed VALUES (1, 'x');
SELECT checked('routed_bloom', 1, 'x') AS after_insert;
-- Hashed by email, an expression's column here: every hash partition's index is read, and under
-- routed_3 (by tenant_id) only the tenant's.
CREATE INDEX routed_lower_bloom ON routed USING bloomfilter (tenant_id, lower(email)) WITH (capacity = 1000);
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('routed_lower_bloom', tenant_id, email)) AS false_negatives
FROM routed;
SELECT checked('routed_lower_bloom', 1, 'USER1@mail.com') AS unrouted_email;

-- Privileges as for a one-column index: a reader needs SELECT on the key columns, and an
-- expression that is not built-in code is applied only for the owner and its members.
CREATE ROLE regress_bloom_cc_owner;
CREATE ROLE regress_bloom_cc_reader;
GRANT USAGE ON SCHEMA regress_bloom_cc TO regress_bloom_cc_owner, regress_bloom_cc_reader;
GRANT CREATE ON SCHEMA regress_bloom_cc TO regress_bloom_cc_owner;
SET ROLE regress_bloom_cc_owner;
CREATE FUNCTION regress_bloom_cc.norm(t text) RETURNS text LANGUAGE sql IMMUTABLE
  RETURN pg_catalog.lower(t);
CREATE TABLE regress_bloom_cc.owned (org_id bigint, username text, secret text);
INSERT INTO regress_bloom_cc.owned VALUES (1, 'Alice', 's1'), (2, 'Bob', 's2');
CREATE INDEX owned_plain ON regress_bloom_cc.owned USING bloomfilter (org_id, username) WITH (capacity = 100);
CREATE INDEX owned_lower ON regress_bloom_cc.owned USING bloomfilter (org_id, lower(username)) WITH (capacity = 100);
CREATE INDEX owned_norm ON regress_bloom_cc.owned USING bloomfilter (org_id, regress_bloom_cc.norm(username)) WITH (capacity = 100);
SELECT bloom_index_contains('owned_norm', 1, 'ALICE') AS owner_norm;
GRANT SELECT (org_id) ON regress_bloom_cc.owned TO regress_bloom_cc_reader;
SET ROLE regress_bloom_cc_reader;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('owned_plain', 1, 'Alice')$$) AS without_username;
RESET ROLE;
SET ROLE regress_bloom_cc_owner;
GRANT SELECT (org_id, username) ON regress_bloom_cc.owned TO regress_bloom_cc_reader;
SET ROLE regress_bloom_cc_reader;
SELECT bloom_index_contains('owned_plain', 1, 'Alice') AS reader_plain,
       bloom_index_contains('owned_lower', 1, 'ALICE') AS reader_built_in,
       bloom_index_contains_key('owned_norm', 1, 'alice') AS reader_key;
SELECT pg_temp.error_of($$SELECT bloom_index_contains('owned_norm', 1, 'ALICE')$$) AS reader_norm;
RESET ROLE;

SET client_min_messages = warning;
RESET search_path;
DROP SCHEMA regress_bloom_cc CASCADE;
DROP ROLE regress_bloom_cc_owner;
DROP ROLE regress_bloom_cc_reader;
