-- A data node: the users whose home is this node (bloom_shard(email, 3) = node), the statistics
-- the coordinator's pushed-down aggregates are planned with, and the delta of its new emails.
-- psql variables: node (1 or 2), rows (emails user1@mail.com .. user<rows>@mail.com over all
-- nodes; this node keeps those homed here), capacity, error_rate.
CREATE EXTENSION bloomfilter;

-- The email decides its home node, so the home node's primary key decides whether an email is
-- taken, whatever the coordinator's filter has merged so far.
CREATE TABLE users (
  email text PRIMARY KEY,
  signed_up_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT users_home CHECK (bloom_shard(email, 3) = :node)
);
INSERT INTO users (email)
SELECT e FROM generate_series(1, :rows) AS g, LATERAL (SELECT 'user' || g || '@mail.com') AS x(e)
WHERE bloom_shard(e, 3) = :node;
VACUUM ANALYZE users;

-- Emails of signups the test rolled back (they must not be in any filter, beyond false positives).
CREATE TABLE rolled_back (email text NOT NULL);

-- Test helper: a made-up email homed at `home` (an application sends a signup to the email's home
-- node; pgbench on this node makes up emails that belong here).
CREATE FUNCTION homed_email(name text, home int) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  attempt int := 0;
BEGIN
  WHILE bloom_shard(name || '.' || attempt || '@mail.com', 3) <> home LOOP
    attempt := attempt + 1;
  END LOOP;
  RETURN name || '.' || attempt || '@mail.com';
END $$;

-- Installed after the initial rows: the initial build covers those, the delta what comes after.
\set users_table users
\ir delta.sql
