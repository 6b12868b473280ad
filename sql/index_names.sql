-- An index named by text is resolved at each call, as a statement resolves a table's name: with
-- the search_path and the role of the moment, quoted names as SQL writes them. A call site that
-- checks again (a loop in PL/pgSQL, many rows of one statement) reuses what it resolved only
-- while nothing it depends on can have changed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
DROP SCHEMA IF EXISTS regress_bloom_names_a CASCADE;
DROP SCHEMA IF EXISTS regress_bloom_names_b CASCADE;
RESET client_min_messages;
CREATE SCHEMA regress_bloom_names_a;
CREATE SCHEMA regress_bloom_names_b;
CREATE TABLE regress_bloom_names_a.mails (email text);
CREATE TABLE regress_bloom_names_b.mails (email text);
INSERT INTO regress_bloom_names_a.mails VALUES ('only-in-a@mail.com');
INSERT INTO regress_bloom_names_b.mails VALUES ('only-in-b@mail.com');
CREATE INDEX mails_bloom ON regress_bloom_names_a.mails USING bloomfilter (email) WITH (capacity = 100);
CREATE INDEX mails_bloom ON regress_bloom_names_b.mails USING bloomfilter (email) WITH (capacity = 100);
CREATE INDEX "Mails Quoted" ON regress_bloom_names_a.mails USING bloomfilter (email) WITH (capacity = 100);

-- Qualified, quoted, and through the search_path.
SELECT bloom_index_contains('regress_bloom_names_a.mails_bloom', 'only-in-a@mail.com') AS qualified_a,
       bloom_index_contains('regress_bloom_names_b.mails_bloom', 'only-in-a@mail.com') AS qualified_b,
       bloom_index_contains('regress_bloom_names_a."Mails Quoted"', 'only-in-a@mail.com') AS quoted;
SET search_path = regress_bloom_names_b, public;
SELECT public.bloom_index_contains('mails_bloom', 'only-in-b@mail.com') AS through_path_b;
RESET search_path;

-- A name that is not a bloomfilter index, or no relation at all, or of a schema that does not
-- exist; and a text that is no name.
\set VERBOSITY sqlstate
SELECT bloom_index_contains('regress_bloom_names_a.mails', 'x');
SELECT bloom_index_contains('regress_bloom_names_a.no_such_index', 'x');
SELECT bloom_index_contains('no_such_schema.mails_bloom', 'x');
SELECT bloom_index_contains('a.b.c.d', 'x');
SELECT bloom_index_contains('"unterminated', 'x');
\set VERBOSITY default

-- One call site, called again after what the name means changed: the search_path (SET in the
-- loop), this transaction's own DROP and CREATE of an index of that name, and a rolled-back
-- subtransaction that had taken the locks.
CREATE FUNCTION pg_temp.same_call_site() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  i int;
BEGIN
  FOR i IN 1 .. 5 LOOP
    IF i = 2 THEN
      PERFORM set_config('search_path', 'regress_bloom_names_b, public', true);
    ELSIF i = 3 THEN
      DROP INDEX regress_bloom_names_b.mails_bloom;
      INSERT INTO regress_bloom_names_b.mails VALUES ('added-before-rebuild@mail.com');
      CREATE INDEX mails_bloom ON regress_bloom_names_b.mails USING bloomfilter (email) WITH (capacity = 100);
    END IF;
    IF i = 4 THEN
      BEGIN
        RETURN NEXT 'call 4 in a subtransaction: ' ||
          public.bloom_index_contains('mails_bloom', 'added-before-rebuild@mail.com');
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN
        NULL;
      END;
    END IF;
    RETURN NEXT 'call ' || i || ' (' || current_setting('search_path') || '): a ' ||
      public.bloom_index_contains('mails_bloom', 'only-in-a@mail.com') || ', b ' ||
      public.bloom_index_contains('mails_bloom', 'only-in-b@mail.com') || ', added ' ||
      public.bloom_index_contains('mails_bloom', 'added-before-rebuild@mail.com');
  END LOOP;
END $$;
BEGIN;
SET LOCAL search_path = regress_bloom_names_a, public;
SELECT * FROM pg_temp.same_call_site();
COMMIT;

-- Within one statement, at one call site: the search_path changed from row to row, and this
-- transaction's own DROP and CREATE of the index between rows.
SELECT i, set_config('search_path', CASE WHEN i % 2 = 1 THEN 'regress_bloom_names_a, public'
                                         ELSE 'regress_bloom_names_b, public' END, true) AS path,
       bloom_index_contains('mails_bloom', 'only-in-a@mail.com') AS a
FROM generate_series(1, 4) i;
RESET search_path;
CREATE FUNCTION pg_temp.rebuilt(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  DROP INDEX regress_bloom_names_b.mails_bloom;
  INSERT INTO regress_bloom_names_b.mails VALUES ('row' || i || '@mail.com');
  CREATE INDEX mails_bloom ON regress_bloom_names_b.mails USING bloomfilter (email) WITH (capacity = 100);
  RETURN i;
END $$;
SELECT pg_temp.rebuilt(i) AS rebuilt,
       bloom_index_contains('regress_bloom_names_b.mails_bloom', 'row' || i || '@mail.com') AS found
FROM generate_series(1, 3) i;

-- Many rows of one statement: the name resolved once, every row answered.
SELECT count(*) FILTER (WHERE bloom_index_contains('regress_bloom_names_a.mails_bloom', email)) AS found,
       count(*) AS rows
FROM regress_bloom_names_a.mails, generate_series(1, 1000);

SET client_min_messages = warning;
DROP SCHEMA regress_bloom_names_a CASCADE;
DROP SCHEMA regress_bloom_names_b CASCADE;
