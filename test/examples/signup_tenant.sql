-- The signup flow for a multi-tenant service, whose unique constraint is UNIQUE (tenant_id, email):
-- the same email may sign up once in each tenant. One bloomfilter index on the two columns (a
-- composite key); the check takes the values in column order. The same flow as sign_up in
-- test/examples/signup.sql: check the index first, go to the unique index only when it says
-- "probably present", insert (PostgreSQL adds the new row's pair to the index).
-- Expects CREATE EXTENSION bloomfilter and an accounts (tenant_id bigint, email text,
-- UNIQUE (tenant_id, email)) table.

CREATE INDEX IF NOT EXISTS accounts_tenant_email_bloom ON accounts USING bloomfilter (tenant_id, email)
  WITH (capacity = 1000000, error_rate = 0.01);

CREATE OR REPLACE PROCEDURE sign_up_tenant(new_tenant_id bigint, new_email text) LANGUAGE plpgsql AS $$
BEGIN
  IF bloom_index_contains('accounts_tenant_email_bloom', new_tenant_id, new_email)
     AND EXISTS (SELECT 1 FROM accounts WHERE tenant_id = new_tenant_id AND email = new_email) THEN
    RAISE EXCEPTION 'email % is already registered in tenant %', new_email, new_tenant_id
      USING ERRCODE = 'unique_violation';
  END IF;
  -- The insert adds the (tenant_id, email) pair to the index, in this transaction.
  INSERT INTO accounts (tenant_id, email) VALUES (new_tenant_id, new_email);
END $$;
