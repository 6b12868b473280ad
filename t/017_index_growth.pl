# A layered index (WITH (expansion = 2)) that grows under concurrent writers, on a primary and
# its hot standby, and through crashes in the middle of growing.
#
# 1. 8 pgbench clients insert random emails into a table whose index starts at capacity 1,000,
#    while a standby replays: the index grows by layers, and every committed row is found on the
#    primary and on the standby, whose open transaction read the index before it grew;
#    bloom_index_verify passes on both; the rate over absent keys stays within error_rate; the
#    layered value bloom_index_filter gives (what followers read) holds every row on both.
# 2. SIGKILL of the primary while writers make a new index grow from capacity 100,
#    BLOOMFILTER_GROWTH_CRASHES times (3): after each recovery every committed row is found and
#    the layers read back, in the index and in its layered value; after the last, it goes on
#    growing.
#   BLOOMFILTER_GROWTH_SECONDS   how long the writers of 1. run (8)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use BloomfilterTAP;

my $seconds = $ENV{BLOOMFILTER_GROWTH_SECONDS} // 8;
my $crashes = $ENV{BLOOMFILTER_GROWTH_CRASHES} // 3;
my $clients = 8;

my $primary = new_node('growth_primary', [ 'fsync = on', 'max_connections = 40' ], allows_streaming => 1);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL);
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
		WITH (capacity = 1000, error_rate = 0.01, expansion = 2);
});
$primary->backup('growth_backup');
my $standby = PostgreSQL::Test::Cluster->new('growth_standby');
$standby->init_from_backup($primary, 'growth_backup', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"hot_standby = on\nmax_standby_streaming_delay = -1\nlog_statement = none\n");
$standby->start;
$primary->wait_for_catchup($standby);

my $missing = q{SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email)};
my $layers = q{SELECT count(*) FROM bloom_index_layers('users_email_bloom')};

# A standby transaction that reads the index while it has one layer, and stays open.
my $reader = $standby->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($reader->query_safe(q{SELECT bloom_index_contains('users_email_bloom', 'nobody@mail.com')}), 'f',
	'the standby transaction reads the index with one layer');

my $work = $primary->basedir;
append_to_file("$work/signup.sql", q{\set n random(1, 9000000000000000000)
INSERT INTO users (email) VALUES ('m' || :client_id || '-' || :n || '@mail.com');
});
my $pgbench = start_pgbench($primary, 'postgres', '-c', $clients, '-j', '2', '-T', $seconds,
	'-f', "$work/signup.sql");
my ($ok, $stdout, $stderr) = finish_pgbench($pgbench);
ok($ok, "$clients writers for $seconds s") or diag($stderr);
my $rows = $primary->safe_psql('postgres', 'SELECT count(*) FROM users');
my $grown = $primary->safe_psql('postgres', $layers);
cmp_ok($grown, '>=', 4, "the index grew to $grown layers for $rows rows (first layer: 1,000 keys)");
is($primary->safe_psql('postgres', $missing), '0', "primary: every one of $rows rows is found");
is($primary->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom')}), $rows,
	'primary: bloom_index_verify checks every row');
# The rate over 200,000 absent keys: at most error_rate (0.01); 2,300 is more than six standard
# deviations above 2,000.
my $false_positives = $primary->safe_psql('postgres', q{SELECT count(*) FROM generate_series(1, 200000) i
	WHERE bloom_index_contains('users_email_bloom', 'ghost' || i || '@mail.com')});
cmp_ok($false_positives, '<=', 2300, "$false_positives false positives in 200,000 absent keys");

$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $layers), $grown, 'the standby has replayed every layer');
is($standby->safe_psql('postgres', $missing), '0', "standby: every one of $rows rows is found");
is($reader->query_safe(q{SELECT count(*) FROM generate_series(1, 1) WHERE bloom_index_contains('users_email_bloom', 'nobody@mail.com')}),
	'0', 'the open standby transaction still answers');
# Its snapshot sees no row, but every key its primary committed since is in the index it reads.
my @keys = split /\n/, $standby->safe_psql('postgres', 'SELECT email FROM users ORDER BY id DESC LIMIT 200');
my $list = join(',', map { "'$_'" } @keys);
is($reader->query_safe(qq{SELECT count(*) FROM unnest(ARRAY[$list]) e WHERE NOT bloom_index_contains('users_email_bloom', e)}),
	'0', 'the standby transaction open since the first layer finds the newest 200 keys');
$reader->query_safe('COMMIT');
$reader->quit;
is($standby->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom')}), $rows,
	'standby: bloom_index_verify checks every row');
# The layered value a follower reads (bloom_index_filter), on both: every layer, every row.
my $value_missing = q{WITH v AS MATERIALIZED (SELECT bloom_index_filter('users_email_bloom') AS f)
	SELECT (SELECT get_byte(f::bytea, 6) FROM v) || ' '
		|| (SELECT count(*) FROM users, v WHERE NOT bloom_contains(v.f, email))};
is($primary->safe_psql('postgres', $value_missing), "$grown 0", "primary: the layered value holds every row");
is($standby->safe_psql('postgres', $value_missing), "$grown 0", "standby: the layered value holds every row");
$standby->stop;

# 2. Crashes while it grows: each time an empty table with a new index of capacity 100, writers,
# SIGKILL after 1 to 3 s, when layers are being added every fraction of a second, and recovery.
for my $crash (1 .. $crashes) {
	$primary->safe_psql('postgres', q{
		DROP INDEX users_email_bloom;
		TRUNCATE users;
		CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
			WITH (capacity = 100, error_rate = 0.01, expansion = 2);
	});
	my $writers = start_pgbench($primary, 'postgres', '-c', $clients, '-j', '2', '-T', 60,
		'-f', "$work/signup.sql");
	sleep(0.5 + $crash);
	kill9_and_restart($primary);
	finish_pgbench($writers);
	my $after = $primary->safe_psql('postgres', $layers);
	my $rows_now = $primary->safe_psql('postgres', 'SELECT count(*) FROM users');
	cmp_ok($after, '>', 1, "crash $crash: the index had grown to $after layers for $rows_now committed rows");
	is($primary->safe_psql('postgres', $missing), '0', "crash $crash: every one of $rows_now committed rows is found");
	is($primary->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom')}), $rows_now,
		"crash $crash: bloom_index_verify checks every row");
	is($primary->safe_psql('postgres', $value_missing), "$after 0",
		"crash $crash: the layered value holds every row");
}
# And it goes on growing after the last recovery.
$primary->safe_psql('postgres', q{INSERT INTO users (email) SELECT 'after' || i || '@mail.com' FROM generate_series(1, 50000) i});
is($primary->safe_psql('postgres', $missing), '0', 'after the crashes, 50,000 more rows: every row is found');
is($primary->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') = count(*) FROM users}), 't',
	'and bloom_index_verify passes');
done_testing();
