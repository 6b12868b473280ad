-- The multi-tenant signup example (test/examples/signup_tenant.sql): a (tenant_id, email) index,
-- the pair checked, then the unique index, then the insert. In a schema of its own.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
CREATE SCHEMA regress_signup_tenant;
SET search_path = regress_signup_tenant, public;
CREATE TABLE accounts (id bigserial PRIMARY KEY, tenant_id bigint NOT NULL, email text NOT NULL,
                       UNIQUE (tenant_id, email));
-- 10 tenants of 100 users each; taken@mail.com in tenant 1 only.
INSERT INTO accounts (tenant_id, email)
  SELECT t, 'user' || i || '@mail.com' FROM generate_series(1, 10) t, generate_series(1, 100) i;
INSERT INTO accounts (tenant_id, email) VALUES (1, 'taken@mail.com');
-- From the source tree, wherever the suite runs (pg_regress sets PG_ABS_SRCDIR).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/examples/signup_tenant.sql
\i :abs_srcdir/sql/include/helpers.sql
-- A new pair is taken in; a registered one turned away; the same email in another tenant taken in.
CALL sign_up_tenant(1, 'fresh@mail.com');
SELECT pg_temp.error_of($$CALL sign_up_tenant(1, 'taken@mail.com')$$);
SELECT pg_temp.error_of($$CALL sign_up_tenant(1, 'fresh@mail.com')$$);
SELECT pg_temp.error_of($$CALL sign_up_tenant(3, 'user7@mail.com')$$);
CALL sign_up_tenant(2, 'taken@mail.com');
SELECT pg_temp.error_of($$CALL sign_up_tenant(2, 'taken@mail.com')$$);
SELECT tenant_id, email,
       bloom_index_contains('accounts_tenant_email_bloom', tenant_id, email) AS indexed
FROM accounts WHERE id > 1000 ORDER BY id;
-- Every row's pair is found; the tenant is part of the key.
SELECT count(*) AS false_negatives FROM accounts
WHERE NOT bloom_index_contains('accounts_tenant_email_bloom', tenant_id, email);
SELECT bloom_index_contains('accounts_tenant_email_bloom', 1, 'taken@mail.com') AS tenant1_taken,
       bloom_index_contains('accounts_tenant_email_bloom', 3, 'taken@mail.com') AS tenant3_taken;
RESET search_path;
DROP SCHEMA regress_signup_tenant CASCADE;
