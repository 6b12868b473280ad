-- A yardstick, not a target: the lookup's query without bloom_contains. It fetches the filters
-- row (not the filter itself, which stays in the TOAST table) and builds the same email.
\set n random(0, 1999999)
SELECT f IS NOT NULL AND 'user' || :n || '@mail.com' IS NOT NULL FROM filters WHERE id = 1;
