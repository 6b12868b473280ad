-- Point lookup in the bloomfilter index on users.email, named as the README does: a text literal,
-- the name resolved at each call (table and index locked, a catalog lookup); one index page read.
\set n random(0, 1999999)
SELECT bloom_index_contains('users_email_bloom', 'user' || :n || '@mail.com');
