-- The lookup a bloom filter saves: a probe of the unique index on users.email.
\set n random(0, 1999999)
SELECT EXISTS (SELECT 1 FROM users WHERE email = 'user' || :n || '@mail.com');
