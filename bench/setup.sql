-- Data of the benchmarks: the article's scenario's million emails user0@mail.com .. user999999@mail.com
-- in a plain table with a unique index and a bloomfilter index, in a table hash-partitioned by id
-- (64 partitions, so an email probe has no global index and visits every partition's index), as a
-- bloom filter stored out of line, and a candidates table of a million emails of which half are
-- present.
\set ON_ERROR_STOP on
CREATE EXTENSION bloomfilter;

CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, 'user' || i || '@mail.com' FROM generate_series(0, 999999) AS i;

CREATE TABLE users_partitioned (id integer NOT NULL, email text NOT NULL) PARTITION BY HASH (id);
SELECT format('CREATE TABLE users_partitioned_%s PARTITION OF users_partitioned '
              'FOR VALUES WITH (MODULUS 64, REMAINDER %s)', r, r)
FROM generate_series(0, 63) AS r \gexec
INSERT INTO users_partitioned SELECT id, email FROM users;
-- A unique index on a partitioned table must contain the partition key, so email gets a plain
-- index on each partition.
CREATE INDEX ON users_partitioned (email);

-- The filter as an index, kept current by PostgreSQL: on the table, and on each partition.
CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01);
CREATE INDEX users_partitioned_email_bloom ON users_partitioned USING bloomfilter (email)
  WITH (capacity = 20000, error_rate = 0.01);
-- A composite key of two columns, checked beside the one-column index (section a).
CREATE INDEX users_id_email_bloom ON users USING bloomfilter (id, email)
  WITH (capacity = 1000000, error_rate = 0.01);

CREATE TABLE filters (id integer PRIMARY KEY, f bloom NOT NULL);
INSERT INTO filters SELECT 1, bloom_agg(email) FROM users;

-- Even rows: a present email picked by a multiplicative walk over 0 .. 999999; odd rows: absent.
CREATE TABLE candidates (email text NOT NULL);
INSERT INTO candidates
SELECT CASE WHEN i % 2 = 0 THEN 'user' || (i::bigint * 7919 % 1000000) || '@mail.com'
            ELSE 'user' || (1000000 + i) || '@mail.com' END
FROM generate_series(0, 999999) AS i;

VACUUM (FREEZE, ANALYZE) users, users_partitioned, filters, candidates;

\ir functions.sql
