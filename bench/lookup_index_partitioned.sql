-- The same on the 64-partition table's bloomfilter index: the table is partitioned by id, so the
-- check reads one page of each partition's index.
\set n random(0, 1999999)
SELECT bloom_index_contains('users_partitioned_email_bloom', 'user' || :n || '@mail.com');
