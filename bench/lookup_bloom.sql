-- Point lookup in the stored filter: a random email, present for n < 1000000, absent above.
\set n random(0, 1999999)
SELECT bloom_contains(f, 'user' || :n || '@mail.com') FROM filters WHERE id = 1;
