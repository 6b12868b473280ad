-- CREATE INDEX within maintenance_work_mem: a filter (of fixed size, expansion = 0; a layered
-- index is always built sorted) larger than it is built from the keys'
-- hashes sorted, a slice of pages at a time, and holds the bytes of the build in memory and of
-- bloom_agg(col, capacity, error_rate), whatever the filter's block size.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TABLE build_input AS SELECT 'user' || i || '@mail.com' AS email FROM generate_series(1, 50000) i;
INSERT INTO build_input VALUES (NULL), ('user7@mail.com');
CREATE TABLE build_empty (email text);

-- Each index's filter, with maintenance_work_mem = 1MB and 1GB.
CREATE FUNCTION build_both(capacity bigint, error_rate float8, tab regclass DEFAULT 'build_input')
RETURNS TABLE (filter_bytes bigint, same_as_in_memory boolean, same_as_bloom_agg boolean)
LANGUAGE plpgsql AS $$
DECLARE
  sliced bloom;
  whole bloom;
  aggregated bloom;
BEGIN
  SET LOCAL maintenance_work_mem = '1MB';
  EXECUTE format('CREATE INDEX build_sliced ON %s USING bloomfilter (email) WITH (capacity = %s, error_rate = %s, expansion = 0)',
                 tab, capacity, error_rate);
  SET LOCAL maintenance_work_mem = '1GB';
  EXECUTE format('CREATE INDEX build_whole ON %s USING bloomfilter (email) WITH (capacity = %s, error_rate = %s, expansion = 0)',
                 tab, capacity, error_rate);
  sliced := bloom_index_filter('build_sliced');
  whole := bloom_index_filter('build_whole');
  EXECUTE format('SELECT coalesce(bloom_agg(email, %s, %s), bloom_empty(%s, %s)) FROM %s',
                 capacity, error_rate, capacity, error_rate, tab) INTO aggregated;
  DROP INDEX build_sliced;
  DROP INDEX build_whole;
  RETURN QUERY SELECT (bloom_info(sliced)).bytes, sliced = whole, sliced = aggregated;
END $$;

SELECT * FROM build_both(2000000, 0.01);
SELECT * FROM build_both(300000, 1e-12);
SELECT * FROM build_both(20000000, 0.5);
SELECT * FROM build_both(3000000, 0.01, 'build_empty');
-- REINDEX and an expression index take the same way.
SET maintenance_work_mem = '1MB';
CREATE INDEX build_lower ON build_input USING bloomfilter (lower(email)) WITH (capacity = 2000000, expansion = 0);
REINDEX INDEX build_lower;
SELECT bloom_index_filter('build_lower') = bloom_agg(lower(email), 2000000, 0.01) AS same,
       (bloom_info(bloom_index_filter('build_lower'))).inserted
FROM build_input;
SELECT count(*) AS missed FROM build_input WHERE NOT bloom_index_contains('build_lower', upper(email));
RESET maintenance_work_mem;

DROP FUNCTION build_both(bigint, float8, regclass);
DROP TABLE build_input, build_empty;
