-- The same check with the index as a regclass: its OID resolved once, when pgbench prepares the
-- statement, where the text literal of lookup_index.sql (the README's form) is resolved at each call.
\set n random(0, 1999999)
SELECT bloom_index_contains('users_email_bloom'::regclass, 'user' || :n || '@mail.com');
