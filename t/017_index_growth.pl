# An index that grows by layers under concurrent writers, on a primary and its hot standby, and
# through crashes in the middle of growing.
#
# 1. 8 pgbench clients insert random emails into a table whose index starts at capacity 1,000
#    (WITH (expansion = 2)), while a standby replays: the index grows by layers and is never
#    rebuilt (its relfilenode stays), and every committed row is found on the primary and on the
#    standby, whose open transaction read the index before it grew; bloom_index_verify passes on
#    both; the rate over absent keys stays within error_rate; the layered value
#    bloom_index_filter gives (what followers read) holds every row on both.
# 2. SIGKILL of the primary while writers make a new index grow from capacity 100,
#    BLOOMFILTER_GROWTH_CRASHES times (3): after each recovery every committed row is found and
#    the layers read back, in the index and in its layered value; after the last, it goes on
#    growing.
#
# At scale, BLOOMFILTER_GROWTH_ROWS=N (10000000: issue #33's done-when, about 6 min on 2 cores),
# 1. is the index created with no options on the empty table (its first layer 10,000 keys), and
# 8 writers of 50 rows a transaction run until the table holds at least N rows; fsync stays on,
# autovacuum is off (an all-visible record would wait for the standby's open transactions, with
# max_standby_streaming_delay = -1). Once the highest id reaches BLOOMFILTER_GROWTH_CRASH_ROWS,
# SIGKILL of the primary (its standby streaming from a slot) BLOOMFILTER_GROWTH_SCALE_CRASHES
# times, alternately as soon as pages are added for the next layer (the relation past the newest
# layer) and as soon as the next layer is published (the count of layers up); after each
# recovery every committed row is found and bloom_index_verify passes, and after the last the
# index gains a layer. A second standby transaction, opened at N/2 rows, finds every row of its
# snapshot at the end; the rate is over 1,000,000 absent keys, the same count on both nodes.
#   BLOOMFILTER_GROWTH_SECONDS        how long the writers of 1. run without a row target (8)
#   BLOOMFILTER_GROWTH_CRASHES        crashes of 2. (3)
#   BLOOMFILTER_GROWTH_ROWS           rows of 1. at scale (unset: the small run)
#   BLOOMFILTER_GROWTH_CRASH_ROWS     at scale, the id from which 1. crashes (2,000,000)
#   BLOOMFILTER_GROWTH_SCALE_CRASHES  at scale, crashes in 1. (3)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use BloomfilterTAP;

my $seconds = $ENV{BLOOMFILTER_GROWTH_SECONDS} // 8;
my $crashes = $ENV{BLOOMFILTER_GROWTH_CRASHES} // 3;
my $target = $ENV{BLOOMFILTER_GROWTH_ROWS} // '';
my $at_scale = $target ne '';
my $scale_crashes = $ENV{BLOOMFILTER_GROWTH_SCALE_CRASHES} // 3;
my $crash_rows = $ENV{BLOOMFILTER_GROWTH_CRASH_ROWS} // 2_000_000;
my $clients = 8;
my $error_rate = 0.01;
if ($at_scale) {
	# Checks of millions of rows in one statement, and crash recoveries, take minutes.
	$PostgreSQL::Test::Utils::timeout_default = 6 * 3600;
	$ENV{PGCTLTIMEOUT} = 3600;
}

my $primary = new_node('growth_primary',
	[ 'fsync = on', 'max_connections = 40', $at_scale ? ('autovacuum = off') : () ],
	allows_streaming => 1);
my $index_options = $at_scale ? '' : "WITH (capacity = 1000, error_rate = $error_rate, expansion = 2)";
$primary->safe_psql('postgres', qq{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL);
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email) $index_options;
	SELECT pg_create_physical_replication_slot('growth_standby');
});
my $filenode = q{SELECT pg_relation_filenode('users_email_bloom')};
my $filenode_before = $primary->safe_psql('postgres', $filenode);
my $first_layer = $at_scale ? 10000 : 1000;
is($primary->safe_psql('postgres', q{SELECT capacity FROM bloom_index_layers('users_email_bloom') WHERE layer = 0}),
	$first_layer, "the empty table's index starts with one layer of $first_layer keys");
$primary->backup('growth_backup');
my $standby = PostgreSQL::Test::Cluster->new('growth_standby');
$standby->init_from_backup($primary, 'growth_backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "hot_standby = on\nmax_standby_streaming_delay = -1\n"
	. "log_statement = none\nprimary_slot_name = 'growth_standby'\n");
$standby->start;
$primary->wait_for_catchup($standby);

my $missing = q{SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email)};
my $layers = q{SELECT count(*) FROM bloom_index_layers('users_email_bloom')};
my $verify = q{SELECT bloom_index_verify('users_email_bloom')};

# A standby transaction that reads the index while it has one layer, and stays open.
my $reader = $standby->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($reader->query_safe(q{SELECT bloom_index_contains('users_email_bloom', 'nobody@mail.com')}), 'f',
	'the standby transaction reads the index with one layer');

my $work = $primary->basedir;
append_to_file("$work/signup.sql", q{\set n random(1, 9000000000000000000)
INSERT INTO users (email) VALUES ('m' || :client_id || '-' || :n || '@mail.com');
});
append_to_file("$work/signup50.sql", q{\set n random(1, 9000000000000000000)
INSERT INTO users (email) SELECT 'm' || :client_id || '-' || :n || '-' || i || '@mail.com'
	FROM generate_series(1, 50) i;
});
my $started = time;
my ($mid_reader, $mid_rows, $last_crash_layers);
if (!$at_scale) {
	my $pgbench = start_pgbench($primary, 'postgres', '-c', $clients, '-j', '2', '-T', $seconds,
		'-f', "$work/signup.sql");
	my ($ok, $stdout, $stderr) = finish_pgbench($pgbench);
	ok($ok, "$clients writers for $seconds s") or diag($stderr);
}
else {
	# The writers, polled every 0.2 s: the highest id (at least the rows) and the index's pages;
	# its layers (bloom_index_layers reads every page) when there are pages past the newest layer:
	# pages added ahead for the next one, not yet published.
	my $cheap = q{SELECT (SELECT coalesce(max(id), 0) FROM users),
		pg_relation_size('users_email_bloom') / current_setting('block_size')::int};
	my $shape = q{SELECT count(*), max(first_block + pages) FROM bloom_index_layers('users_email_bloom')};
	my @plan = map { $_ % 2 ? 'pages ahead' : 'published' } 1 .. $scale_crashes;
	my $crashed = 0;
	my ($count, $end) = split /\|/, $primary->safe_psql('postgres', $shape);
	my $seen_layers = $count;
	my $writers = start_pgbench($primary, 'postgres', '-c', $clients, '-j', '2', '-T', 86400,
		'-f', "$work/signup50.sql");
	for (;;) {
		my ($high, $blocks) = split /\|/, $primary->safe_psql('postgres', $cheap);
		($count, $end) = split /\|/, $primary->safe_psql('postgres', $shape) if $blocks > $end;
		my $ahead = $blocks - $end;
		last if $high >= $target;
		if (!$writers->{handle}->pumpable) {
			my ($ok, $stdout, $stderr) = finish_pgbench($writers);
			fail("the writers stopped at id $high") or diag($stderr);
			last;
		}
		if (!defined $mid_reader && $high >= $target / 2) {
			# A second standby transaction, opened halfway: its snapshot's rows, all found at the end.
			$mid_reader = $standby->background_psql('postgres', on_error_stop => 0);
			$mid_reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
			$mid_rows = $mid_reader->query_safe('SELECT count(*) FROM users');
			note "a standby transaction opened at id $high sees $mid_rows rows";
		}
		my $kind = $plan[$crashed];
		if (defined $kind && $high >= $crash_rows
			&& ($kind eq 'pages ahead' ? $ahead > 0 : $count > $seen_layers)) {
			$crashed++;
			kill9_and_restart($primary);
			finish_pgbench($writers);
			my $now = $primary->safe_psql('postgres',
				qq{SELECT count(*) || ' rows, ' || ($layers) || ' layers' FROM users});
			diag(sprintf('crash %d (%s) at %.0f s: %d layers, %d pages ahead, highest id %d before; '
				. 'after recovery %s', $crashed, $kind, time - $started, $count, $ahead, $high, $now));
			my $rows_now = $primary->safe_psql('postgres', 'SELECT count(*) FROM users');
			is($primary->safe_psql('postgres', $missing), '0',
				"scale crash $crashed ($kind, $count layers): every one of $rows_now committed rows is found");
			is($primary->safe_psql('postgres', $verify), $rows_now,
				"scale crash $crashed: bloom_index_verify checks every row");
			($count, $end) = split /\|/, $primary->safe_psql('postgres', $shape);
			$seen_layers = $last_crash_layers = $count;
			$writers = start_pgbench($primary, 'postgres', '-c', $clients, '-j', '2', '-T', 86400,
				'-f', "$work/signup50.sql");
			next;
		}
		$seen_layers = $count;
		sleep(0.2);
	}
	stop_pgbench($writers);
	is($crashed, $scale_crashes, "$crashed crashes while the index grew");
	# Ids lost to rolled back inserts: the rest in one statement.
	$primary->safe_psql('postgres', qq{INSERT INTO users (email)
		SELECT 'last' || i || '\@mail.com' FROM generate_series(1, $target - (SELECT count(*) FROM users)) i});
}
my $rows = $primary->safe_psql('postgres', 'SELECT count(*) FROM users');
my $grown = $primary->safe_psql('postgres', $layers);
diag(sprintf('%d rows, %d layers, %s, after %.0f s of writers', $rows, $grown,
	$primary->safe_psql('postgres', q{SELECT pg_size_pretty(pg_relation_size('users_email_bloom'))}),
	time - $started));
cmp_ok($rows, '>=', $target, "the table holds at least $target rows") if $at_scale;
my $least = $at_scale ? int(log($rows / $first_layer + 1) / log(2)) : 4;
cmp_ok($grown, '>=', $least, "the index grew to $grown layers for $rows rows (first layer: $first_layer keys)");
cmp_ok($grown, '>', $last_crash_layers, "and by a layer after the last crash ($last_crash_layers then)")
	if defined $last_crash_layers;
is($primary->safe_psql('postgres', $filenode), $filenode_before,
	"never rebuilt: relfilenode $filenode_before before and after");
my $checks = time;
is($primary->safe_psql('postgres', $missing), '0', "primary: every one of $rows rows is found");
is($primary->safe_psql('postgres', $verify), $rows, 'primary: bloom_index_verify checks every row');
# The rate over absent keys: at most error_rate, with a margin of six standard deviations of the
# count at error_rate (2,266 in 200,000; 10,596 in 1,000,000).
my $absent = $at_scale ? 1_000_000 : 200_000;
my $allowed = int($absent * $error_rate + 6 * sqrt($absent * $error_rate * (1 - $error_rate)));
my $ghosts = qq{SELECT count(*) FROM generate_series(1, $absent) i
	WHERE bloom_index_contains('users_email_bloom', 'ghost' || i || '\@mail.com')};
my $false_positives = $primary->safe_psql('postgres', $ghosts);
cmp_ok($false_positives, '<=', $allowed, "$false_positives false positives in $absent absent keys");
note 'bloom_index_info: ' . $primary->safe_psql('postgres', q{SELECT i::text FROM bloom_index_info('users_email_bloom') i});
note "layers:\n" . $primary->safe_psql('postgres', q{SELECT l::text FROM bloom_index_layers('users_email_bloom') l});

$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $layers), $grown, 'the standby has replayed every layer');
is($standby->safe_psql('postgres', $filenode), $filenode_before, 'the standby has the same relfilenode');
is($standby->safe_psql('postgres', $missing), '0', "standby: every one of $rows rows is found");
is($standby->safe_psql('postgres', $ghosts), $false_positives,
	"standby: the same $false_positives false positives in $absent absent keys") if $at_scale;
# The grown index may hold nobody@mail.com as a false positive: the answer a new transaction gets.
my $nobody = q{SELECT bloom_index_contains('users_email_bloom', 'nobody@mail.com')};
is($reader->query_safe($nobody), $standby->safe_psql('postgres', $nobody),
	'the open standby transaction still answers, as a new one does');
# Its snapshot sees no row, but every key its primary committed since is in the index it reads.
my @keys = split /\n/, $standby->safe_psql('postgres', 'SELECT email FROM users ORDER BY id DESC LIMIT 200');
my $list = join(',', map { "'$_'" } @keys);
is($reader->query_safe(qq{SELECT count(*) FROM unnest(ARRAY[$list]) e WHERE NOT bloom_index_contains('users_email_bloom', e)}),
	'0', 'the standby transaction open since the first layer finds the newest 200 keys');
$reader->query_safe('COMMIT');
$reader->quit;
if (defined $mid_reader) {
	is($mid_reader->query_safe(qq{SELECT count(*) || ' ' || count(*) FILTER (WHERE NOT
		bloom_index_contains('users_email_bloom', email)) FROM users}), "$mid_rows 0",
		"the standby transaction open since $mid_rows rows finds each of them in the grown index");
	$mid_reader->query_safe('COMMIT');
	$mid_reader->quit;
}
is($standby->safe_psql('postgres', $verify), $rows, 'standby: bloom_index_verify checks every row');
# The layered value a follower reads (bloom_index_filter), on both: every layer, every row.
my $value_missing = q{WITH v AS MATERIALIZED (SELECT bloom_index_filter('users_email_bloom') AS f)
	SELECT (SELECT get_byte(f::bytea, 6) FROM v) || ' '
		|| (SELECT count(*) FROM users, v WHERE NOT bloom_contains(v.f, email))};
is($primary->safe_psql('postgres', $value_missing), "$grown 0", "primary: the layered value holds every row");
is($standby->safe_psql('postgres', $value_missing), "$grown 0", "standby: the layered value holds every row");
diag(sprintf('checks of the %d rows on both nodes: %.0f s', $rows, time - $checks));
$standby->stop;
$primary->safe_psql('postgres', q{SELECT pg_drop_replication_slot('growth_standby')});

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
