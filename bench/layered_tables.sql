-- The clients' benchmarks' (bench/python_client.sh, bench/node_client.sh) layered batch rows: the
-- same keys in a fixed-size index, and in an index grown to 6 layers by inserts
-- (16,000 x 31 < 1,000,000 <= 16,000 x 63), each on a table of its own.
CREATE TABLE fixed (email text NOT NULL);
INSERT INTO fixed SELECT i::text FROM generate_series(0, 999999) AS i;
CREATE INDEX fixed_email_bloom ON fixed USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01, expansion = 0);
CREATE TABLE grown (email text NOT NULL);
CREATE INDEX grown_email_bloom ON grown USING bloomfilter (email)
  WITH (capacity = 16000, error_rate = 0.01, expansion = 2);
INSERT INTO grown SELECT i::text FROM generate_series(0, 999999) AS i;
