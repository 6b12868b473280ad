-- Every error, with its SQLSTATE and message.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql

-- Parameters: 22023, naming the parameter and its range.
SELECT pg_temp.error_of($$SELECT bloom_empty(0)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(-5, 0.01)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, 0)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, 1)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, -0.1)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, 'NaN')$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, 'Infinity')$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(1000000000000, 0.01)$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(900000000, 0.01)$$);
SELECT pg_temp.error_of($$SELECT bloom_shard('x'::text, 0)$$);
SELECT pg_temp.error_of($$SELECT bloom_agg(email, 1.5) FROM (VALUES ('a')) v(email)$$);
SELECT pg_temp.error_of($$SELECT bloom_agg(email, NULL::float8) FROM (VALUES ('a')) v(email)$$);
SELECT pg_temp.error_of($$SELECT bloom_agg(email, 0, 0.01) FROM (VALUES ('a')) v(email)$$);
SELECT pg_temp.error_of($$SELECT bloom_agg(email, 10, 'NaN') FROM (VALUES ('a')) v(email)$$);
SELECT pg_temp.error_of($$SELECT bloom_agg(email, NULL, 0.01) FROM (VALUES ('a')) v(email)$$);

-- Union of filters with different parameters says which one differs.
SELECT pg_temp.error_of($$SELECT bloom_union(bloom_empty(100), bloom_empty(200))$$);
SELECT pg_temp.error_of($$SELECT bloom_empty(100, 0.01) | bloom_empty(100, 0.02)$$);
SELECT pg_temp.error_of($$SELECT bloom_union_agg(f) FROM (VALUES (bloom_empty(10)), (bloom_empty(11))) v(f)$$);

-- Malformed text: 22P02.
SELECT pg_temp.error_of($$SELECT ''::bloom$$);
SELECT pg_temp.error_of($$SELECT 'hello'::bloom$$);
SELECT pg_temp.error_of($$SELECT '\x0'::bloom$$);
SELECT pg_temp.error_of($$SELECT '\xzz'::bloom$$);
SELECT pg_temp.error_of($$SELECT '\x00'::bloom$$);
SELECT pg_temp.error_of($$SELECT ('\x' || repeat('00', 36))::bloom$$);

-- Malformed bytea: 22P03, one case per check. Start from a valid 548-byte filter and break it.
CREATE TEMP TABLE good AS SELECT bloom_empty(10)::bytea AS b;
SELECT pg_temp.error_of($$SELECT '\x'::bytea::bloom$$);
SELECT pg_temp.error_of($$SELECT substring(b FROM 1 FOR 35)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x58' FROM 1)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x03' FROM 5)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x0b' FROM 6)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x40' FROM 6)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x0d' FROM 6)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x0800' FROM 7)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x02000000' FROM 9)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x0000000000000000' FROM 13)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x40420f0000000000' FROM 13)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x000000000000f87f' FROM 21)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\x000000000000f03f' FROM 21)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT (b || '\x00'::bytea)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT substring(b FROM 1 FOR 547)::bloom FROM good$$);
-- Any inserted count and any bit pattern are valid.
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\xffffffffffffffff' FROM 29)::bloom FROM good$$);
SELECT pg_temp.error_of($$SELECT overlay(b PLACING '\xff' FROM 300)::bloom FROM good$$);

-- Malformed binary input (binary COPY): 22P03.
-- (A file in the server's data directory, named after this backend, removed afterwards.)
SELECT current_setting('data_directory') || '/bloomfilter_regress_errors_' || pg_backend_pid() || '.copy' AS copy_file \gset
COPY (SELECT overlay(b PLACING '\x00' FROM 1) FROM good) TO :'copy_file' WITH (FORMAT binary);
CREATE TEMP TABLE target (f bloom);
SELECT pg_temp.error_of(format('COPY target FROM %L WITH (FORMAT binary)', :'copy_file'));
SELECT count(*) AS rows_loaded FROM target;
SELECT 'rm -f -- ' || :'copy_file' AS remove_file \gset
-- No row: rm reads nothing, and may be gone before a row is written to it (EPIPE).
COPY (SELECT WHERE false) TO PROGRAM :'remove_file';
