-- The same probe on a table partitioned by id: no global index on email, so it visits the
-- email index of each of the 64 partitions.
\set n random(0, 1999999)
SELECT EXISTS (SELECT 1 FROM users_partitioned WHERE email = 'user' || :n || '@mail.com');
