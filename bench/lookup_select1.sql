-- The round trip alone: the same client-side work as the lookups, a query that reads nothing.
\set n random(0, 1999999)
SELECT 1;
