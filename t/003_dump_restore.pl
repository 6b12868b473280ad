# bloom values and bloomfilter indexes through pg_dump and restore, in three forms (custom format
# with pg_restore, serial and -j 2; plain format with psql), and through binary COPY:
# every value comes back byte-identical and stored as before; the indexes come back with their
# definitions, rebuilt to the source's filters byte for byte, and keep adding new rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('dump_restore');
my $work = $node->basedir;

$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql('source', q{
CREATE EXTENSION bloomfilter;
CREATE TABLE filters (name text PRIMARY KEY, f bloom);
INSERT INTO filters VALUES
  ('empty', bloom_empty(1000)),
  ('small', bloom_add(bloom_empty(100), ARRAY['alice@mail.com', 'bob@mail.com', 'carol@mail.com'])),
  ('null', NULL);
-- 1,000,000 emails: 1,204,260 bytes, out of line and uncompressed (the type's STORAGE external).
INSERT INTO filters SELECT 'emails_1m', bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 1000000) i;
-- p = 0.001: 10 hashes, 16384-bit blocks.
INSERT INTO filters SELECT 'rate_0.001', bloom_agg(i::bigint, 50000, 0.001) FROM generate_series(1, 20000) i;
-- Sparse filters compress: a column set to STORAGE extended keeps them compressed.
CREATE TABLE compressed_filters (name text PRIMARY KEY, f bloom);
ALTER TABLE compressed_filters ALTER COLUMN f SET STORAGE EXTENDED;
INSERT INTO compressed_filters SELECT 'sparse_1m', bloom_agg('user' || i || '@mail.com', 1000000, 0.01) FROM generate_series(1, 1000) i;
INSERT INTO compressed_filters VALUES ('empty_1m', bloom_empty(1000000));

-- bloomfilter indexes of fixed size (their filters compare with bloom_agg's): one over a text
-- column (the default error rate), one over a bigint column of a table in another schema
-- (p = 0.001).
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000, expansion = 0);
CREATE SCHEMA app;
CREATE TABLE app.accounts (id bigint PRIMARY KEY);
INSERT INTO app.accounts SELECT generate_series(1, 5000);
CREATE INDEX accounts_id_bloom ON app.accounts USING bloomfilter (id) WITH (capacity = 50000, error_rate = 0.001, expansion = 0);
});

# Every bloom value: its md5, length and how it is stored.
my $storage = q{CASE WHEN f IS NULL THEN 'null' WHEN pg_column_compression(f) IS NOT NULL THEN 'compressed ' || pg_column_compression(f)
	WHEN pg_column_size(f) < 2000 THEN 'inline' ELSE 'out-of-line' END};
my $values_sql = qq{
  SELECT 'filters', name, coalesce(md5(f::bytea), 'NULL'), coalesce(octet_length(f::bytea), 0), $storage FROM filters
  UNION ALL
  SELECT 'compressed_filters', name, coalesce(md5(f::bytea), 'NULL'), coalesce(octet_length(f::bytea), 0), $storage
  FROM compressed_filters
  ORDER BY 1, 2};
# Each bloomfilter index: its definition, whether it is valid, and its filter's length and md5.
my $indexes_sql = q{
  SELECT pg_get_indexdef(i.indexrelid), i.indisvalid, octet_length(bloom_index_filter(i.indexrelid)::bytea),
         md5(bloom_index_filter(i.indexrelid)::bytea)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
  WHERE a.amname = 'bloomfilter' ORDER BY 1};
# Each index's filter against bloom_agg over its table's rows, with the index's capacity and
# error rate: equal, byte for byte, right after a build.
my $agg_equal_sql = q{
  SELECT (SELECT bloom_index_filter('users_email_bloom') = bloom_agg(email, 100000, 0.01) FROM users)
         || ' ' || (SELECT bloom_index_filter('app.accounts_id_bloom') = bloom_agg(id, 50000, 0.001) FROM app.accounts)};
my $false_negatives_sql = q{
  SELECT (SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
       + (SELECT count(*) FROM app.accounts WHERE NOT bloom_index_contains('app.accounts_id_bloom', id))};

my $source_values = $node->safe_psql('source', $values_sql);
is(join("\n", map { join('|', (split /\|/)[ 0, 1, 4 ]) } split /\n/, $source_values),
	join("\n", 'compressed_filters|empty_1m|compressed pglz', 'compressed_filters|sparse_1m|compressed pglz',
		'filters|emails_1m|out-of-line', 'filters|empty|inline', 'filters|null|null',
		'filters|rate_0.001|out-of-line', 'filters|small|inline'),
	'source: bloom values stored inline, out of line, compressed and NULL');
is($node->safe_psql('source', q{SELECT octet_length(f::bytea) FROM filters WHERE name = 'emails_1m'}),
	'1204260', 'source: the 1M-email filter is 1,204,260 bytes (2,352 blocks of 512 bytes and the header)');
my $source_indexes = $node->safe_psql('source', $indexes_sql);
is(join("\n", map { join('|', (split /\|/)[ 0 .. 2 ]) } split /\n/, $source_indexes),
	join("\n",
		q{CREATE INDEX accounts_id_bloom ON app.accounts USING bloomfilter (id) WITH (capacity='50000', error_rate='0.001', expansion='0')|t|92196},
		q{CREATE INDEX users_email_bloom ON public.users USING bloomfilter (email) WITH (capacity='100000', expansion='0')|t|120868}),
	'source: two valid bloomfilter indexes, text and bigint (definition, valid, bytes)');
is($node->safe_psql('source', $agg_equal_sql), 'true true', 'source: each index\'s filter equals bloom_agg over its rows');
is($node->safe_psql('source', $false_negatives_sql), '0', 'source: every row found by bloom_index_contains');

# A plain dump without the per-dump \restrict key, to compare two dumps.
sub plain_dump {
	my ($database, $file) = @_;
	my ($ok, undef, $stderr) = node_run($node, 'pg_dump', '-Fp', '-d', $database, '-f', $file);
	die "pg_dump $database: $stderr" unless $ok;
	return join('', grep { !/^\\(un)?restrict / } split /^/, slurp_file($file));
}

###############################################################################################
# pg_dump and restore into fresh databases.
###############################################################################################
my ($dumped) = node_run($node, 'pg_dump', '-Fc', '-d', 'source', '-f', "$work/source.dump");
ok($dumped, 'pg_dump -Fc of the source');
my $source_dump = plain_dump('source', "$work/source.sql");

# Parallel pg_restore loads the tables and builds the indexes at the same time.
my %restore = (
	restored_custom => [ 'custom format (pg_dump -Fc, pg_restore)',
		[ 'pg_restore', '--exit-on-error', '-d', 'restored_custom', "$work/source.dump" ] ],
	restored_parallel => [ 'custom format (pg_dump -Fc, pg_restore -j 2)',
		[ 'pg_restore', '--exit-on-error', '-j', '2', '-d', 'restored_parallel', "$work/source.dump" ] ],
	restored_plain => [ 'plain format (pg_dump, psql)',
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'restored_plain', '-f', "$work/source.sql" ] ],
);
my @restored;
for my $db (sort keys %restore) {
	my ($label, $command) = @{ $restore{$db} };
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($ok, undef, $stderr) = node_run($node, @$command);
	ok($ok && $stderr eq '', "restore, $label: restores without an error or warning") or diag($stderr);
	next unless $ok;
	push @restored, $db;
	is($node->safe_psql($db, $values_sql), $source_values,
		"$db: every bloom value byte-identical, stored as before");
	# The indexes are built again from the restored rows: the same filters, byte for byte.
	is($node->safe_psql($db, $indexes_sql), $source_indexes,
		"$db: bloomfilter indexes restored: same definitions, valid, filters byte-identical to the source's");
	is($node->safe_psql($db, $agg_equal_sql), 'true true', "$db: each index's filter equals bloom_agg over the restored rows");
	is($node->safe_psql($db, $false_negatives_sql), '0', "$db: every restored row found by bloom_index_contains");
	# A dump of the restored database is the original dump.
	is(plain_dump($db, "$work/$db.sql"), $source_dump, "$db: dumps again to the same plain dump");
}

# The same inserts and updates in the source and in every restored database: the restored
# indexes add exactly what the original ones add.
my $workload_sql = q{
  INSERT INTO users (email) SELECT 'after' || i || '@mail.com' FROM generate_series(1, 1000) i;
  UPDATE users SET email = 'renamed' || id || '@mail.com' WHERE id <= 100;
  INSERT INTO app.accounts SELECT generate_series(100001, 100500);};
# The 1,600 keys the writes add: how many an index says are (probably) there.
my $new_keys_found_sql = q{
  SELECT (SELECT count(*) FILTER (WHERE bloom_index_contains('users_email_bloom', 'after' || i || '@mail.com'))
          FROM generate_series(1, 1000) i)
       + (SELECT count(*) FILTER (WHERE bloom_index_contains('users_email_bloom', 'renamed' || i || '@mail.com'))
          FROM generate_series(1, 100) i)
       + (SELECT count(*) FILTER (WHERE bloom_index_contains('app.accounts_id_bloom', i::bigint))
          FROM generate_series(100001, 100500) i)};
# Deletes and updates clear no bits: after the writes, each filter's bits (past the 36-byte
# header, whose count of keys is the build's) are those of bloom_agg over the rows and over the
# emails the update replaced.
my $bits_sql = q{
  SELECT (SELECT substring(bloom_index_filter('users_email_bloom')::bytea FROM 37)
                 = substring(bloom_agg(e, 100000, 0.01)::bytea FROM 37)
          FROM (SELECT email FROM users UNION ALL SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100) i) k (e))
         || ' ' || (SELECT substring(bloom_index_filter('app.accounts_id_bloom')::bytea FROM 37)
                           = substring(bloom_agg(id, 50000, 0.001)::bytea FROM 37) FROM app.accounts)};
for my $db ('source', @restored) {
	my $found_before = $node->safe_psql($db, $new_keys_found_sql);
	cmp_ok($found_before, '<', 100, "writes, $db: few of the 1,600 new keys are false positives before ($found_before)");
	$node->safe_psql($db, $workload_sql);
	is($node->safe_psql($db, $new_keys_found_sql), '1600', "writes, $db: the 1,100 new and changed emails and 500 new ids are found");
	is($node->safe_psql($db, $false_negatives_sql), '0', "writes, $db: every row found by bloom_index_contains");
	is($node->safe_psql($db, $bits_sql), 'true true', "writes, $db: the filters' bits are bloom_agg's over every key written");
	if ($db eq 'source') {
		$source_indexes = $node->safe_psql('source', $indexes_sql);
		next;
	}
	is($node->safe_psql($db, $indexes_sql), $source_indexes, "writes, $db: filters byte-identical to the source's after the same writes");
	# Growing: a new capacity, taken by a rebuild that does not block writers.
	$node->safe_psql($db, 'ALTER INDEX users_email_bloom SET (capacity = 200000)');
	$node->safe_psql($db, 'REINDEX INDEX CONCURRENTLY users_email_bloom');
	$node->safe_psql($db, q{INSERT INTO users (email) VALUES ('after.reindex@mail.com')});
	my $rows = $node->safe_psql($db, 'SELECT count(*) FROM users');
	is($node->safe_psql($db, q{SELECT capacity, inserted, needs_rebuild, bloom_index_contains('users_email_bloom', 'after.reindex@mail.com'),
			(SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
		FROM bloom_index_info('users_email_bloom')}),
		'200000|' . ($rows - 1) . '|f|t|0',
		"$db: ALTER INDEX SET (capacity), REINDEX CONCURRENTLY: new capacity, build of every row, then an insert is found");
}

###############################################################################################
# Binary COPY out of the source and into the same tables in a fresh database.
###############################################################################################
$node->safe_psql('postgres', 'CREATE DATABASE copy_target');
$node->safe_psql('copy_target', q{
CREATE EXTENSION bloomfilter;
CREATE TABLE filters (name text PRIMARY KEY, f bloom);
CREATE TABLE compressed_filters (name text PRIMARY KEY, f bloom);
ALTER TABLE compressed_filters ALTER COLUMN f SET STORAGE EXTENDED;
});
for my $table (qw(filters compressed_filters)) {
	my $file = "$work/$table.copy";
	$node->safe_psql('source', "\\copy $table TO '$file' WITH (FORMAT binary)");
	$node->safe_psql('copy_target', "\\copy $table FROM '$file' WITH (FORMAT binary)");
	my $fingerprint = "SELECT name, coalesce(md5(f::bytea), 'NULL'), octet_length(f::bytea) FROM $table ORDER BY name";
	my $count = $node->safe_psql('source', "SELECT count(*) FROM $table");
	is($node->safe_psql('copy_target', $fingerprint), $node->safe_psql('source', $fingerprint),
		"binary COPY round trip, $table: $count values byte-identical in a fresh database");
}
$node->safe_psql('source', qq{
\\copy (SELECT name, f FROM filters ORDER BY name) TO '$work/send.copy' WITH (FORMAT binary)
\\copy (SELECT name, f::bytea FROM filters ORDER BY name) TO '$work/bytea.copy' WITH (FORMAT binary)
});
ok(slurp_file("$work/send.copy") eq slurp_file("$work/bytea.copy"),
	'binary COPY sends the byte format: the same file as COPY of f::bytea');

$node->stop;
done_testing();
