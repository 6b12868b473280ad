# bloom_index_changes under wal_level = minimal: an index written in the transaction that gave it
# a new file (TRUNCATE, REINDEX, VACUUM FULL) writes no WAL, and when the file is synced at
# commit rather than logged (wal_skip_threshold), its pages keep no WAL position. A copy brought
# up to date by the changes since a position taken before must still hold every committed key.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

# wal_skip_threshold = 0: every new file is synced at commit, none logged whole.
my $node = new_node('minimal', [ 'wal_level = minimal', 'max_wal_senders = 0', 'wal_skip_threshold = 0' ]);
$node->safe_psql('postgres', q{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE keys (k text);
	CREATE INDEX keys_bloom ON keys USING bloomfilter (k) WITH (capacity = 20000);
	CREATE INDEX keys_k ON keys (k);
	INSERT INTO keys SELECT 'old' || i FROM generate_series(1, 1000) i;
	-- A follower's copy: the filter, then what changed since a WAL position.
	CREATE TABLE copy (filter bytea, since pg_lsn);
	CREATE FUNCTION take_copy() RETURNS void LANGUAGE sql AS $$
		DELETE FROM copy;
		INSERT INTO copy SELECT NULL, pg_current_wal_insert_lsn();
		UPDATE copy SET filter = bloom_index_filter('keys_bloom')::bytea;
	$$;
	CREATE FUNCTION refreshed_copy() RETURNS bloom LANGUAGE plpgsql AS $$
	DECLARE
		result bytea;
		change record;
	BEGIN
		SELECT filter INTO result FROM copy;
		FOR change IN SELECT c.* FROM copy, bloom_index_changes('keys_bloom', copy.since) c LOOP
			result := overlay(result PLACING change.bytes FROM change.byte_offset::int + 1);
		END LOOP;
		RETURN result::bloom;
	END $$;
});

# refreshed(WHAT, SQL): a copy is taken, SQL runs, and the copy brought up to date must equal the
# index's filter and hold the key 'new'.
sub refreshed {
	my ($what, $sql) = @_;
	$node->safe_psql('postgres', 'SELECT take_copy()');
	$node->safe_psql('postgres', $sql);
	is($node->safe_psql('postgres', q{SELECT bloom_contains(refreshed_copy(), 'new'::text),
			refreshed_copy() = bloom_index_filter('keys_bloom'),
			bloom_index_contains('keys_bloom', 'new')}),
		't|t|t', "$what: the copy brought up to date holds the committed key");
	$node->safe_psql('postgres', q{DELETE FROM keys WHERE k = 'new'; REINDEX INDEX keys_bloom});
}

refreshed('TRUNCATE and INSERT in one transaction',
	q{BEGIN; TRUNCATE keys; INSERT INTO keys VALUES ('new'); COMMIT;});
refreshed('INSERT, then REINDEX', q{INSERT INTO keys VALUES ('new'); REINDEX INDEX keys_bloom;});
refreshed('INSERT, then VACUUM FULL', q{INSERT INTO keys VALUES ('new'); VACUUM FULL keys;});
refreshed('INSERT, then CLUSTER', q{INSERT INTO keys VALUES ('new'); CLUSTER keys USING keys_k;});

# The same after a restart: the synced pages still carry no WAL position.
$node->safe_psql('postgres', 'SELECT take_copy()');
$node->safe_psql('postgres', q{BEGIN; TRUNCATE keys; INSERT INTO keys VALUES ('new'); COMMIT;});
$node->restart;
is($node->safe_psql('postgres', q{SELECT bloom_contains(refreshed_copy(), 'new'::text)}), 't',
	'after a restart the copy brought up to date holds the committed key');

$node->stop;
done_testing();
