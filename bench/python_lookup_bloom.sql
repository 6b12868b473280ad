-- The application's point lookup in the stored filter, with the key as the text parameter $1
-- (in -M prepared, pgbench sends :n as a parameter, the number's text): present for
-- n < 1000000, absent above.
\set n random(0, 1999999)
SELECT bloom_contains(f, :n) FROM filters WHERE id = 1;
