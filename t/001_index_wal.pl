# A bloomfilter index through WAL: a streaming standby holds the same filter and answers the
# same, and after the primary is killed (SIGKILL) crash recovery loses no committed key.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $primary = PostgreSQL::Test::Cluster->new('primary');
init_node($primary, allows_streaming => 1);
# Every generic WAL record also carries the page as the primary has it, and the standby checks
# its replay against it: a record that replays to another page stops the standby. (The WAL is
# kept for the standby to catch up after the primary restarts.)
$primary->append_conf('postgresql.conf', "wal_consistency_checking = 'generic'\nwal_keep_size = '1GB'\n");
$primary->start;
create_users($primary, 10000);
# And an index that grows by layers from 1,000 keys: its pages added ahead, its first bits on
# each, the layers published and the bits set afterwards all go through WAL.
# A multicolumn index (a composite key, an expression column among them) grows the same way.
$primary->safe_psql('postgres', q{CREATE TABLE grown (email text NOT NULL);
	CREATE INDEX grown_email ON grown USING bloomfilter (email) WITH (capacity = 1000, expansion = 2);
	CREATE INDEX grown_pair ON grown USING bloomfilter (lower(email), email) WITH (capacity = 1000, expansion = 2)});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# The filter's bytes and its false negatives over the table, on a node.
my $filter = q{SELECT md5(bloom_index_filter('users_email_bloom')::bytea) || ' ' || md5(bloom_index_filter('users_email_ci_bloom')::bytea)
	|| ' ' || md5(bloom_index_filter('grown_email')::bytea) || ' ' || md5(bloom_index_filter('grown_pair')::bytea)};
my $grown_missing = q{SELECT count(*) FROM grown WHERE NOT bloom_index_contains('grown_email', email)
	OR NOT bloom_index_contains('grown_pair', email, email)};
my $missing = $MISSING_USERS;

# Rows added after the standby's base backup reach it as generic WAL records.
$primary->safe_psql('postgres',
	q{INSERT INTO users (email) SELECT 'late' || i || '@mail.com' FROM generate_series(1, 5000) i;
	INSERT INTO grown SELECT 'late' || i || '@mail.com' FROM generate_series(1, 5000) i});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $filter), $primary->safe_psql('postgres', $filter),
	'the standby holds the primary\'s filters');
is($standby->safe_psql('postgres', $missing), '0', 'the standby finds every row');
cmp_ok($standby->safe_psql('postgres', q{SELECT count(*) FROM bloom_index_layers('grown_email')}), '>=', 3,
	'the growing index has grown by layers');
is($standby->safe_psql('postgres', $grown_missing), '0', 'the standby finds every row in the grown index');
is($standby->safe_psql('postgres', $VERIFY_USERS), 't|t', 'bloom_index_verify on the standby: no key missing');
is($standby->safe_psql('postgres', q{SELECT bloom_index_contains('users_email_bloom', 'ghost@mail.com')}),
	'f', 'the standby answers "absent"');

# Committed and rolled-back rows, then SIGKILL: recovery replays every committed key.
$primary->safe_psql('postgres', q{
	INSERT INTO users (email) SELECT 'before-crash' || i || '@mail.com' FROM generate_series(1, 3000) i;
	INSERT INTO grown SELECT 'before-crash' || i || '@mail.com' FROM generate_series(1, 3000) i;
	BEGIN;
	INSERT INTO users (email) SELECT 'rolled-back' || i || '@mail.com' FROM generate_series(1, 100) i;
	ROLLBACK;
});
kill9_and_restart($primary);
is($primary->safe_psql('postgres', $missing), '0', 'after crash recovery every committed row is found');
is($primary->safe_psql('postgres', $grown_missing), '0', '... in the grown index too');
is($primary->safe_psql('postgres', $VERIFY_USERS), 't|t', 'bloom_index_verify after crash recovery: no key missing');
# The bits: every committed key's, and of the rolled-back keys at most theirs (their WAL need
# not reach the disk before the crash).
my $bits = q{substring(%s::bytea FROM 37)};
my $committed = q{(SELECT bloom_agg(email, 100000, 0.01) FROM users)};
my $with_rolled_back = q{(SELECT bloom_add(bloom_agg(email, 100000, 0.01),
	(SELECT array_agg('rolled-back' || i || '@mail.com') FROM generate_series(1, 100) i)) FROM users)};
my $index = q{bloom_index_filter('users_email_bloom')};
is($primary->safe_psql('postgres', sprintf("SELECT $bits = $bits", "($index | $committed)", $index)),
	't', 'after crash recovery the filter holds every committed key\'s bits');
is($primary->safe_psql('postgres', sprintf("SELECT $bits = $bits", "($index | $with_rolled_back)", $with_rolled_back)),
	't', 'and no bit of a key never added');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $filter), $primary->safe_psql('postgres', $filter),
	'the standby follows the recovered primary');
ok(!$standby->log_contains('inconsistent page found') && !$primary->log_contains('inconsistent page found'),
	'every generic WAL record replayed to the page the primary wrote');

done_testing();
