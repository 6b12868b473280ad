-- The signup flow of the mission: check the filter first, go to the unique index only when the
-- filter says "probably present", insert, add. Three ways to keep the filter current:
--   sign_up_single:  one filter row, updated by the procedure (simple; serialises signups);
--   sign_up_sharded: 64 filter rows chosen by bloom_shard (adds rewrite a 64th of the filter);
--   sign_up:         a bloomfilter index on users (email): PostgreSQL adds each new row's key.
-- Expects CREATE EXTENSION bloomfilter and a users (email text UNIQUE) table.

CREATE TABLE IF NOT EXISTS email_filter (id int PRIMARY KEY, f bloom NOT NULL);
CREATE TABLE IF NOT EXISTS email_filter_shards (shard int PRIMARY KEY, f bloom NOT NULL);

-- Build all three from the existing rows; room for 1,000,000 emails in all.
INSERT INTO email_filter
SELECT 1, coalesce(bloom_agg(email, 1000000, 0.01), bloom_empty(1000000, 0.01)) FROM users;
-- Each shard's capacity: its mean share plus 4 standard deviations, ceil(15625 + 4 * sqrt(15625 * 63 / 64)).
INSERT INTO email_filter_shards
SELECT s, coalesce(b.f, bloom_empty(16122, 0.01))
FROM generate_series(0, 63) s
LEFT JOIN (SELECT bloom_shard(email, 64) AS shard, bloom_agg(email, 16122, 0.01) AS f
           FROM users GROUP BY 1) b ON b.shard = s;
CREATE INDEX IF NOT EXISTS users_email_bloom ON users USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01);

CREATE OR REPLACE PROCEDURE sign_up_single(new_email text) LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT bloom_contains(f, new_email) FROM email_filter WHERE id = 1)
     AND EXISTS (SELECT 1 FROM users WHERE email = new_email) THEN
    RAISE EXCEPTION 'email % is already registered', new_email USING ERRCODE = 'unique_violation';
  END IF;
  INSERT INTO users (email) VALUES (new_email);
  UPDATE email_filter SET f = bloom_add(f, new_email) WHERE id = 1;
END $$;

CREATE OR REPLACE PROCEDURE sign_up_sharded(new_email text) LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT bloom_contains(f, new_email) FROM email_filter_shards WHERE shard = bloom_shard(new_email, 64))
     AND EXISTS (SELECT 1 FROM users WHERE email = new_email) THEN
    RAISE EXCEPTION 'email % is already registered', new_email USING ERRCODE = 'unique_violation';
  END IF;
  INSERT INTO users (email) VALUES (new_email);
  UPDATE email_filter_shards SET f = bloom_add(f, new_email) WHERE shard = bloom_shard(new_email, 64);
END $$;

CREATE OR REPLACE PROCEDURE sign_up(new_email text) LANGUAGE plpgsql AS $$
BEGIN
  IF bloom_index_contains('users_email_bloom', new_email)
     AND EXISTS (SELECT 1 FROM users WHERE email = new_email) THEN
    RAISE EXCEPTION 'email % is already registered', new_email USING ERRCODE = 'unique_violation';
  END IF;
  -- The insert adds the email to the index, in this transaction.
  INSERT INTO users (email) VALUES (new_email);
END $$;
