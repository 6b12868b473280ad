-- Helpers shared by the pg_regress files; each file that needs them includes this one.
-- error_of(query): the SQLSTATE and message a statement fails with, or 'no error'.
CREATE FUNCTION pg_temp.error_of(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE query;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
