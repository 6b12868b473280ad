# A transaction open across REINDEX INDEX CONCURRENTLY reads the index the name means now, on a
# hot standby and on the primary.
#
# 1. On a hot standby, a READ COMMITTED transaction checks users_email_bloom by name and stays
#    open. The primary's REINDEX CONCURRENTLY waits only for the primary's lockers: it swaps
#    the indexes and marks the old one dead (no longer maintained); a row inserted then, and
#    replayed, must be found by the standby transaction's next check ('t', no error), which
#    must not read the dead old index. The old index's OID (a regclass saved before the swap)
#    raises 40001 "was replaced by REINDEX CONCURRENTLY", never answers.
#    The row goes in between "marked dead" and "dropped": session H1 holds a lock on users
#    when REINDEX starts, so its wait 'waiting for readers before marking dead' waits for H1;
#    session H2 locks users once that wait started, so only the next wait, 'waiting for readers
#    before dropping', waits for it. H1 commits: the old index is marked dead (indisready =
#    false), and REINDEX waits for H2 while the row is inserted and the standby checks it.
# 2. On the primary, a transaction that checked the index holds REINDEX CONCURRENTLY at
#    'waiting for readers before marking dead', after the swap: a row inserted then is found by
#    its next check, and the old OID raises 40001.
# Each swap checks bloom_index_verify after REINDEX; the failures (a false answer, an error, a
# phase or index state not as expected) are counted.
#   BLOOMFILTER_SWAPS   swaps of each kind (3)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use BloomfilterTAP;

my $swaps = $ENV{BLOOMFILTER_SWAPS} // 3;
my $timeout = $PostgreSQL::Test::Utils::timeout_default;

my $primary = new_node('swap_primary', [], allows_streaming => 1);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL);
	INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i;
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 10000);
});
$primary->backup('swap_backup');
my $standby = PostgreSQL::Test::Cluster->new('swap_standby');
$standby->init_from_backup($primary, 'swap_backup', has_streaming => 1);
# Replay waits for the standby's transactions rather than cancelling them.
$standby->append_conf('postgresql.conf',
	"hot_standby = on\nmax_standby_streaming_delay = -1\nlog_statement = none\n");
$standby->start;
$primary->wait_for_catchup($standby);

# A psql session in the background that goes on after an error; the timeout is per query.
sub session {
	my ($node) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	$session->set_query_timer_restart;
	return $session;
}

# run_sql(SESSION, SQL): (output, errors): psql's stderr for these statements, '' without one.
sub run_sql {
	my ($session, $sql) = @_;
	my $output = $session->query($sql);
	my $errors = $session->{stderr};
	$session->{stderr} = '';
	return ($output, $errors);
}

# poll(SESSION, SQL, EXPECTED, WHAT): runs SQL until it answers EXPECTED; dies after $timeout.
sub poll {
	my ($session, $sql, $expected, $what) = @_;
	my $deadline = time + $timeout;
	my ($output, $errors) = ('', '');
	while (time < $deadline) {
		($output, $errors) = run_sql($session, $sql);
		return if $errors eq '' && $output eq $expected;
		sleep 0.01;
	}
	die "timed out waiting for $what: last answer '$output' $errors";
}

my ($failures, $checks, $oid_checks) = (0, 0, 0);

# expect(WHAT, OUTPUT, ERRORS, EXPECTED): one failure unless OUTPUT is EXPECTED without error.
sub expect {
	my ($what, $output, $errors, $expected) = @_;
	return 1 if $errors eq '' && $output eq $expected;
	$failures++;
	diag("$what: '$output', expected '$expected'" . ($errors eq '' ? '' : ", error: $errors"));
	return 0;
}

# check(SESSION, KEY, WHAT): the check by name answers true, without error.
sub check {
	my ($session, $key, $what) = @_;
	$checks++;
	expect("$what: bloom_index_contains('users_email_bloom', '$key')",
		run_sql($session, qq{SELECT bloom_index_contains('users_email_bloom', '$key')}), 't');
}

# check_replaced(SESSION, OID, KEY, WHAT): the check by the old index's OID raises 40001 (in a
# savepoint, so the transaction goes on).
sub check_replaced {
	my ($session, $oid, $key, $what) = @_;
	$checks++;
	$oid_checks++;
	my ($output, $errors) = run_sql($session, qq{SAVEPOINT old_oid;
SELECT bloom_index_contains(${oid}::oid::regclass, '$key');
ROLLBACK TO SAVEPOINT old_oid;});
	return if $output eq '' && $errors =~ /ERROR:\s+40001: bloomfilter index "users_email_bloom_ccold\d*" was replaced by REINDEX CONCURRENTLY/;
	$failures++;
	diag("$what: bloom_index_contains(${oid}::regclass, '$key') answered '$output', expected error 40001"
		. ($errors eq '' ? '' : ", error: $errors"));
}

my $monitor = session($primary);           # the primary's progress, catalog and inserts
my $standby_monitor = session($standby);   # the standby's replay
my $reader = session($standby);            # the standby transaction
my $h1 = session($primary);                # H1, and the primary transaction
my $h2 = session($primary);
my $reindex = session($primary);
my ($reindex_pid) = run_sql($reindex, 'SELECT pg_backend_pid()');
my $phase = "SELECT phase FROM pg_stat_progress_create_index WHERE pid = $reindex_pid";

# REINDEX CONCURRENTLY in the background; finish_reindex waits for it and checks the index.
sub start_reindex {
	$reindex->query_until(qr/reindex started/,
		"\\echo reindex started\nREINDEX INDEX CONCURRENTLY users_email_bloom;\n\\echo reindex done\n");
}

sub finish_reindex {
	my ($what) = @_;
	$reindex->query_until(qr/reindex done/, '');
	expect("$what: REINDEX CONCURRENTLY", '', $reindex->{stderr}, '');
	$reindex->{stderr} = '';
	# Every row checked, and the old index dropped.
	expect("$what: bloom_index_verify after REINDEX", run_sql($monitor, q{SELECT
		bloom_index_verify('users_email_bloom') = (SELECT count(*) FROM users),
		NOT EXISTS (SELECT FROM pg_class WHERE relname LIKE 'users_email_bloom_ccold%')}), 't|t');
}

# The old index's name, indisvalid and indisready.
sub old_index {
	my ($oid) = @_;
	return run_sql($monitor, "SELECT c.relname, i.indisvalid, i.indisready FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indexrelid = $oid");
}

# wait_for_replay(WHAT): the standby has replayed all the primary wrote so far.
sub wait_for_replay {
	my ($what) = @_;
	my ($lsn) = run_sql($monitor, 'SELECT pg_current_wal_lsn()');
	poll($standby_monitor, "SELECT pg_last_wal_replay_lsn() >= '$lsn'", 't', "$what: replay");
}

my $started = time;
my ($swapped, $inserted) = (0, 0);
for my $n (1 .. $swaps) {
	# A wait that timed out leaves the sessions where they were: the failure is counted and the
	# swaps stop.
	next if eval { swap($n); 1 };
	$failures++;
	diag("swap $n: $@");
	last;
}
my $seconds = time - $started;
# Their transactions end: after a failure, one may hold up REINDEX or the standby's replay.
$_->quit for ($reader, $h1, $h2, $reindex, $monitor, $standby_monitor);

# swap(N): the N-th swap of each kind.
sub swap {
	my ($n) = @_;
	# 1. The standby. Its transaction starts once the previous swap is replayed: one that locked
	# the previous old index before the standby replayed its swap would hold up the replay of its
	# drop (max_standby_streaming_delay = -1) and so of the row this one is to find.
	my $what = "standby swap $n";
	my $key = "after-swap-$n\@mail.com";
	wait_for_replay("$what, the previous swap");
	run_sql($reader, 'BEGIN ISOLATION LEVEL READ COMMITTED');
	$checks++;
	my ($answer, $errors) = run_sql($reader,
		q{SELECT bloom_index_contains('users_email_bloom', 'user1@mail.com'), 'users_email_bloom'::regclass::oid});
	my ($found, $old_oid) = split /\|/, $answer;
	expect("$what: check before the swap", $found // '', $errors, 't');
	$old_oid //= 0;

	run_sql($h1, 'BEGIN; LOCK TABLE users IN ACCESS SHARE MODE;');
	start_reindex();
	poll($monitor, $phase, 'waiting for readers before marking dead', "$what: REINDEX waiting for H1");
	run_sql($h2, 'BEGIN; SELECT count(*) FROM users;');
	run_sql($h1, 'COMMIT');
	poll($monitor, $phase, 'waiting for readers before dropping', "$what: REINDEX waiting for H2");
	expect("$what: the old index once marked dead", old_index($old_oid), 'users_email_bloom_ccold|f|f');

	run_sql($monitor, "INSERT INTO users (email) VALUES ('$key')");
	$inserted++;
	wait_for_replay("$what, the insert");

	check($reader, $key, $what);
	expect("$what: count(*) of the new row", run_sql($reader, "SELECT count(*) FROM users WHERE email = '$key'"), '1');
	check_replaced($reader, $old_oid, $key, $what);
	check($reader, $key, "$what, after the savepoint");
	expect("$what: COMMIT", run_sql($reader, 'COMMIT'), '');
	run_sql($h2, 'COMMIT');
	finish_reindex($what);

	# 2. The primary: its transaction holds REINDEX before the old index is marked dead.
	$what = "primary swap $n";
	$key = "primary-swap-$n\@mail.com";
	run_sql($h1, 'BEGIN ISOLATION LEVEL READ COMMITTED');
	$checks++;
	($answer, $errors) = run_sql($h1,
		q{SELECT bloom_index_contains('users_email_bloom', 'user2@mail.com'), 'users_email_bloom'::regclass::oid});
	($found, $old_oid) = split /\|/, $answer;
	expect("$what: check before the swap", $found // '', $errors, 't');
	$old_oid //= 0;
	start_reindex();
	poll($monitor, $phase, 'waiting for readers before marking dead', "$what: REINDEX waiting for the transaction");
	expect("$what: the old index once swapped", old_index($old_oid), 'users_email_bloom_ccold|f|t');
	run_sql($monitor, "INSERT INTO users (email) VALUES ('$key')");
	$inserted++;
	check($h1, $key, $what);
	expect("$what: count(*) of the new row", run_sql($h1, "SELECT count(*) FROM users WHERE email = '$key'"), '1');
	check_replaced($h1, $old_oid, $key, $what);
	expect("$what: COMMIT", run_sql($h1, 'COMMIT'), '');
	finish_reindex($what);
	$swapped++;
}

is($failures, 0, 'checks in transactions open across REINDEX CONCURRENTLY: no false answer, no error');
note(sprintf('%d swaps on the standby and %d on the primary, %d checks (%d by the old OID), %d failures, in %.1f s (%.3f s per swap)',
	$swapped, $swapped, $checks, $oid_checks, $failures, $seconds, $swapped ? $seconds / (2 * $swapped) : 0));

$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') = count(*) FROM users}), 't',
	'after replay, bloom_index_verify on the standby finds every row');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM users WHERE email LIKE '%swap-%'}), $inserted,
	'the standby has every row inserted during a swap');

$standby->stop;
$primary->stop;
done_testing();
