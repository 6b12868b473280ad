# pg_upgrade of a cluster holding bloomfilter indexes (on a column, on an expression, partial,
# on a table partitioned by another column and on one partitioned by the indexed column) to a
# new cluster of the same major version, once copying the files and once linking them. On the
# new cluster: the indexes are valid, their filters byte for byte those of the old cluster,
# every row's key is found (by bloom_index_contains, and by bloom_index_verify, which reads the
# table and fails naming the first row whose key is missing), they take new rows and find them,
# and a follower's copy of a filter
# taken on the old cluster is brought up to date by bloom_index_changes after a WAL position of
# the old cluster. A database whose extension is at 2.1 keeps its index's fixed size through
# REINDEX, before and after ALTER EXTENSION UPDATE.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $schema = q{
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL, active bool NOT NULL);
INSERT INTO users SELECT i, 'User' || i || '@Mail.com', i % 3 <> 0 FROM generate_series(1, 20000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 50000);
CREATE INDEX users_lower_bloom ON users USING bloomfilter (lower(email)) WITH (capacity = 50000, error_rate = 0.001);
CREATE INDEX users_active_bloom ON users USING bloomfilter (email) WITH (capacity = 50000) WHERE active;
-- Partitioned by another column: a check reads every partition's index.
CREATE TABLE events (region int NOT NULL, key bigint NOT NULL) PARTITION BY LIST (region);
CREATE TABLE events_1 PARTITION OF events FOR VALUES IN (1);
CREATE TABLE events_2 PARTITION OF events FOR VALUES IN (2);
CREATE TABLE events_other PARTITION OF events DEFAULT;
INSERT INTO events SELECT i % 4, i FROM generate_series(1, 20000) i;
CREATE INDEX events_key_bloom ON events USING bloomfilter (key) WITH (capacity = 50000);
-- Partitioned by the indexed column: a check reads the partition the key routes to.
CREATE TABLE accounts (name text NOT NULL) PARTITION BY HASH (name);
CREATE TABLE accounts_0 PARTITION OF accounts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE accounts_1 PARTITION OF accounts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE accounts_2 PARTITION OF accounts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO accounts SELECT 'account-' || i FROM generate_series(1, 20000) i;
CREATE INDEX accounts_name_bloom ON accounts USING bloomfilter (name) WITH (capacity = 50000);
-- A follower's copy of users_email_bloom: the WAL position first, then the filter.
CREATE TABLE follower (filter bytea, since pg_lsn);
INSERT INTO follower SELECT NULL, pg_current_wal_insert_lsn();
UPDATE follower SET filter = bloom_index_filter('users_email_bloom')::bytea;
CREATE FUNCTION refreshed_copy() RETURNS bloom LANGUAGE plpgsql AS $$
DECLARE
	result bytea;
	change record;
BEGIN
	SELECT filter INTO result FROM follower;
	FOR change IN SELECT c.* FROM follower, bloom_index_changes('users_email_bloom', follower.since) c LOOP
		result := overlay(result PLACING change.bytes FROM change.byte_offset::int + 1);
	END LOOP;
	RETURN result::bloom;
END $$;
};

# For each index, the rows whose key it should hold and how many of them it misses (through the
# expression for users_lower_bloom: a check of upper(email) finds lower(email)).
my $missing_sql = q{
SELECT 'accounts_name_bloom', count(*), count(*) FILTER (WHERE NOT bloom_index_contains('accounts_name_bloom', name)) FROM accounts
UNION ALL
SELECT 'events_key_bloom', count(*), count(*) FILTER (WHERE NOT bloom_index_contains('events_key_bloom', key)) FROM events
UNION ALL
SELECT 'users_active_bloom', count(*), count(*) FILTER (WHERE NOT bloom_index_contains('users_active_bloom', email)) FROM users WHERE active
UNION ALL
SELECT 'users_email_bloom', count(*), count(*) FILTER (WHERE NOT bloom_index_contains('users_email_bloom', email)) FROM users
UNION ALL
SELECT 'users_lower_bloom', count(*), count(*) FILTER (WHERE NOT bloom_index_contains('users_lower_bloom', upper(email))) FROM users
ORDER BY 1};

# bloom_index_verify of each index: the rows it checked (an error, XX002, for a missing key).
my $verify_sql = q{
SELECT bloom_index_verify('accounts_name_bloom'), bloom_index_verify('events_key_bloom'),
       bloom_index_verify('users_active_bloom'), bloom_index_verify('users_email_bloom'),
       bloom_index_verify('users_lower_bloom')};

# Every bloomfilter index (partitions' included): whether it is valid, and for those with a
# filter of their own, its length and md5.
my $indexes_sql = q{
SELECT c.relname, i.indisvalid,
       CASE WHEN c.relkind = 'i' THEN octet_length(bloom_index_filter(c.oid)::bytea) END,
       CASE WHEN c.relkind = 'i' THEN md5(bloom_index_filter(c.oid)::bytea) END
FROM pg_class c JOIN pg_am a ON a.oid = c.relam JOIN pg_index i ON i.indexrelid = c.oid
WHERE a.amname = 'bloomfilter' ORDER BY 1};

my @expected_missing = ('accounts_name_bloom|20000|0', 'events_key_bloom|20000|0', 'users_active_bloom|13334|0',
	'users_email_bloom|20000|0', 'users_lower_bloom|20000|0');

# pg_upgrade writes its scripts into the current directory.
chdir $PostgreSQL::Test::Utils::tmp_check;

# PostgreSQL 15 copies by default and has no --copy; later versions take it.
my ($help) = run_command([ 'pg_upgrade', '--help' ]);
my %modes = (copy => ($help =~ /--copy\b/ ? [ '--copy' ] : []), link => [ '--link' ]);

for my $mode (sort keys %modes) {
	# Both clusters made by init_node alike: pg_upgrade requires the same encoding and locale.
	my $old = new_node("old_$mode");
	my $bindir = $old->config_data('--bindir');
	$old->safe_psql('postgres', $schema);
	# A database whose extension is still at 2.1, with an index made without options.
	$old->safe_psql('postgres', 'CREATE DATABASE at21');
	$old->safe_psql('at21', q{CREATE EXTENSION bloomfilter VERSION '2.1';
		CREATE TABLE t (k text);
		INSERT INTO t SELECT 'k' || i FROM generate_series(1, 3000) i;
		CREATE INDEX t_k ON t USING bloomfilter (k);});
	is($old->safe_psql('postgres', $missing_sql), join("\n", @expected_missing),
		"$mode: old cluster: every row's key found (index|rows|missing)");
	is($old->safe_psql('postgres', $verify_sql), '20000|20000|13334|20000|20000',
		"$mode: old cluster: bloom_index_verify checks every row of each index");
	my $old_indexes = $old->safe_psql('postgres', $indexes_sql);
	is(scalar(() = $old_indexes =~ /^\w+\|t\|/mg), 11, "$mode: old cluster: 11 valid bloomfilter indexes");
	$old->stop;

	my $new = PostgreSQL::Test::Cluster->new("new_$mode");
	init_node($new);
	command_ok(
		[
			'pg_upgrade', '--no-sync', '-d', $old->data_dir, '-D', $new->data_dir,
			'-b', $bindir, '-B', $bindir, '-s', $new->host, '-p', $old->port, '-P', $new->port,
			@{ $modes{$mode} }
		],
		"$mode: pg_upgrade " . (@{ $modes{$mode} } ? "@{ $modes{$mode} }" : '(copying, the default)'));
	$new->start;

	# Linked, the new cluster's index file is the old one's (two links); copied, its own.
	my $file = $new->data_dir . '/' . $new->safe_psql('postgres', q{SELECT pg_relation_filepath('users_email_bloom')});
	is((stat $file)[3], $mode eq 'link' ? 2 : 1, "$mode: users_email_bloom's file has " . ($mode eq 'link' ? 'two links' : 'one link'));

	is($new->safe_psql('postgres', $indexes_sql), $old_indexes,
		"$mode: new cluster: the same indexes, valid, their filters byte for byte the old ones");
	is($new->safe_psql('postgres', $missing_sql), join("\n", @expected_missing),
		"$mode: new cluster: every row's key found (index|rows|missing)");
	is($new->safe_psql('postgres', $verify_sql), '20000|20000|13334|20000|20000',
		"$mode: new cluster: bloom_index_verify finds no missing key");

	$new->safe_psql('postgres', q{
		INSERT INTO users VALUES (100001, 'Upgraded@Mail.com', true), (100002, 'Inactive@Mail.com', false);
		INSERT INTO events VALUES (1, 100001), (2, 100002), (9, 100003);
		INSERT INTO accounts SELECT 'upgraded-' || i FROM generate_series(1, 30) i;
	});
	is($new->safe_psql('postgres', q{
		SELECT bloom_index_contains('users_email_bloom', 'Upgraded@Mail.com'),
		       bloom_index_contains('users_email_bloom', 'Inactive@Mail.com'),
		       bloom_index_contains('users_lower_bloom', 'UPGRADED@MAIL.COM'),
		       bloom_index_contains('users_active_bloom', 'Upgraded@Mail.com'),
		       bloom_index_contains('events_key_bloom', 100001),
		       bloom_index_contains('events_key_bloom', 100003),
		       (SELECT bool_and(bloom_index_contains('accounts_name_bloom', 'upgraded-' || i)) FROM generate_series(1, 30) i)}),
		't|t|t|t|t|t|t', "$mode: new cluster: the rows inserted after the upgrade are found");
	is($new->safe_psql('postgres', $missing_sql),
		join("\n", 'accounts_name_bloom|20030|0', 'events_key_bloom|20003|0', 'users_active_bloom|13335|0',
			'users_email_bloom|20002|0', 'users_lower_bloom|20002|0'),
		"$mode: new cluster: every row's key found after the inserts (index|rows|missing)");
	is($new->safe_psql('postgres', $verify_sql), '20030|20003|13335|20002|20002',
		"$mode: new cluster: bloom_index_verify finds no missing key after the inserts");
	is($new->safe_psql('postgres', q{
		SELECT bloom_contains(refreshed_copy(), 'Upgraded@Mail.com'::text), refreshed_copy() = bloom_index_filter('users_email_bloom'),
		       (SELECT filter FROM follower)::bloom = bloom_index_filter('users_email_bloom')}),
		't|t|f', "$mode: new cluster: the follower's copy brought up to date from a WAL position of the old cluster");

	# The database at 2.1: pg_upgrade keeps the extension's version; while it is 2.1 a REINDEX
	# keeps the index's fixed size (1,000,000 keys: 1,294,336 bytes); the update gives it
	# expansion = 0, so a REINDEX after it does too; a new index without options grows.
	is($new->safe_psql('at21', q{SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'}), '2.1',
		"$mode: at21: the extension is still at 2.1");
	$new->safe_psql('at21', 'REINDEX INDEX t_k');
	is($new->safe_psql('at21', q{SELECT pg_relation_size('t_k')}), '1294336',
		"$mode: at21: REINDEX before the update keeps the fixed size");
	$new->safe_psql('at21', 'ALTER EXTENSION bloomfilter UPDATE; REINDEX INDEX t_k;
		CREATE INDEX t_new ON t USING bloomfilter (k);');
	is($new->safe_psql('at21', q{SELECT (SELECT reloptions FROM pg_class WHERE relname = 't_k'),
			(SELECT full_pages IS NULL AND capacity = 1000000 FROM bloom_index_layers('t_k')),
			(SELECT full_pages IS NOT NULL AND capacity = 10000 FROM bloom_index_layers('t_new')),
			(SELECT count(*) FROM t WHERE NOT bloom_index_contains('t_k', k) OR NOT bloom_index_contains('t_new', k))}),
		'{expansion=0}|t|t|0',
		"$mode: at21: after the update, REINDEX keeps the fixed size; a new index grows; no key missing");
	$new->stop;
}

done_testing();
