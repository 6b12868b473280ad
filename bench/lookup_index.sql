-- Point lookup in the bloomfilter index on users.email: one index page read.
\set n random(0, 1999999)
SELECT bloom_index_contains('users_email_bloom', 'user' || :n || '@mail.com');
