-- The bloom type: text, binary and bytea forms, all the same portable bytes.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TEMP TABLE t (id int, f bloom);
INSERT INTO t VALUES
  (1, bloom_add(bloom_empty(1000, 0.01), ARRAY['a@mail.com', 'b@mail.com'])),
  (2, bloom_empty(10)),
  (3, bloom_add(bloom_empty(100000, 0.001), 'c@mail.com'::text));

-- The header, byte for byte: "BLOM", version 1, log2 of block bits, hashes (u16), blocks (u32),
-- capacity (u64), error_rate (IEEE-754 double), inserted (u64), all little-endian.
SELECT id, substring(f::bytea FROM 1 FOR 36) AS header, octet_length(f::bytea) AS bytes FROM t ORDER BY id;

-- Text form: \x and hex, and back.
SELECT id, left(f::text, 20) AS text_start, length(f::text) AS text_length,
       f::text::bloom = f AS text_round_trip
FROM t ORDER BY id;

-- bytea cast both ways.
SELECT id, f::bytea::bloom = f AS bytea_round_trip,
       bloom_from_bytea(f::bytea) = f AS from_bytea
FROM t ORDER BY id;

-- Binary send/receive, through binary COPY. The files go in the server's data directory, the one
-- place it may always write, named after this backend, and are removed at the end.
SELECT current_setting('data_directory') || '/bloomfilter_regress_types_' || pg_backend_pid() AS copy_file \gset
SELECT :'copy_file' || '.copy' AS binary_file, :'copy_file' || '.txt' AS text_file \gset
COPY t TO :'binary_file' WITH (FORMAT binary);
CREATE TEMP TABLE t_copy (id int, f bloom);
COPY t_copy FROM :'binary_file' WITH (FORMAT binary);
SELECT t.id, t.f = c.f AS binary_copy_round_trip,
       bloom_contains(c.f, 'a@mail.com') AS a, bloom_contains(c.f, 'c@mail.com') AS c
FROM t JOIN t_copy c USING (id) ORDER BY t.id;

-- Text COPY round trip.
COPY t TO :'text_file';
TRUNCATE t_copy;
COPY t_copy FROM :'text_file';
SELECT t.id, t.f = c.f AS text_copy_round_trip FROM t JOIN t_copy c USING (id) ORDER BY t.id;
-- The program reads what COPY writes before it ends: no broken pipe, whoever is first.
SELECT 'cat > /dev/null; rm -f -- ' || :'binary_file' || ' ' || :'text_file' AS remove_files \gset
COPY (SELECT) TO PROGRAM :'remove_files';

-- Casts and storage as declared.
SELECT castsource::regtype, casttarget::regtype, castmethod, castcontext
FROM pg_cast WHERE castsource = 'bloom'::regtype OR casttarget = 'bloom'::regtype ORDER BY 1, 2;
SELECT typname, typstorage, typalign, typlen FROM pg_type WHERE typname = 'bloom';

-- Every object documents itself.
SELECT count(*) AS functions_without_comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'bloomfilter'
WHERE obj_description(p.oid, 'pg_proc') IS NULL;
SELECT p.proname, p.provolatile, p.proparallel, count(*)
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'bloomfilter'
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
