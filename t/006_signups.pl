# Concurrent signups (pgbench, 8 clients) into each way of keeping a filter current, then a check
# that every committed email is found. Each variant gets its own database with 100,000 existing
# users and test/examples/signup.sql; 1 signup in 10 is rolled back. Emails are drawn from 9e18
# numbers a client, so that two signups of a run never draw the same one.
# Variants: plain (INSERT, unique index only), single (procedure, one filter row), sharded
# (procedure, 64 shard rows), index (INSERT into a table with a bloomfilter index), reindex (the
# same, the index rebuilt by REINDEX CONCURRENTLY in the middle of the run).
# Prints (with prove -v) a row per variant: signups/s, WAL bytes per signup, committed and
# rolled-back counts, rolled-back emails the filter answers "present" for, false negatives;
# `make bench` reads them. Knobs:
#   BLOOMFILTER_SIGNUP_SECONDS    seconds per variant (5)
#   BLOOMFILTER_SIGNUP_VARIANTS   the variants, in order ("single sharded index reindex")
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $seconds = $ENV{BLOOMFILTER_SIGNUP_SECONDS} // 5;
my @variants = split ' ', ($ENV{BLOOMFILTER_SIGNUP_VARIANTS} // 'single sharded index reindex');
my $clients = 8;

# What each variant calls to sign up, what it drops of signup.sql's three filters, and how it
# asks its filter about the email EMAIL.
my %procedure = (single => 'sign_up_single', sharded => 'sign_up_sharded');
my %drop = (
	plain => 'DROP INDEX users_email_bloom; DROP TABLE email_filter, email_filter_shards',
	single => 'DROP INDEX users_email_bloom',
	sharded => 'DROP INDEX users_email_bloom',
	index => 'DROP TABLE email_filter, email_filter_shards',
	reindex => 'DROP TABLE email_filter, email_filter_shards');
my %check = (
	plain => 'true',
	single => 'bloom_contains((SELECT f FROM email_filter WHERE id = 1), EMAIL)',
	sharded => 'bloom_contains((SELECT f FROM email_filter_shards WHERE shard = bloom_shard(EMAIL, 64)), EMAIL)',
	index => q{bloom_index_contains('users_email_bloom', EMAIL)},
	reindex => q{bloom_index_contains('users_email_bloom', EMAIL)});
for my $variant (@variants) {
	BAIL_OUT("unknown variant $variant (plain, single, sharded, index, reindex)") unless $drop{$variant};
}

my $node = new_node('signups', [ 'max_connections = 40', 'synchronous_commit = on',
	'max_wal_size = 4GB', 'checkpoint_timeout = 30min' ]);
my $work = $node->basedir;
note(sprintf('%-11s %10s %14s %10s %12s %16s %16s',
	qw(variant signups/s WAL/signup committed rolled_back rolled_back_seen false_negatives)));

for my $variant (@variants) {
	my $db = "signup_$variant";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(0, 99999) i;
CREATE TABLE rolled_back (email text);
\i test/examples/signup.sql
});
	# Each variant pays only for its own filter.
	$node->safe_psql($db, $drop{$variant});
	$node->safe_psql($db, 'VACUUM ANALYZE');
	my $signup = $procedure{$variant}
		? "CALL $procedure{$variant}(PREFIX || :client_id || '-' || :n || '\@mail.com');"
		: "INSERT INTO users (email) VALUES (PREFIX || :client_id || '-' || :n || '\@mail.com');";
	(my $commit = $signup) =~ s/PREFIX/'c'/;
	(my $rollback = $signup) =~ s/PREFIX/'rb'/;
	append_to_file("$work/$variant-signup.sql", "\\set n random(1, 9000000000000000000)\n$commit\n");
	append_to_file("$work/$variant-rollback.sql", "\\set n random(1, 9000000000000000000)\nBEGIN;\n$rollback\nROLLBACK;\n"
		. "INSERT INTO rolled_back VALUES ('rb' || :client_id || '-' || :n || '\@mail.com');\n");

	my $wal_before = $node->safe_psql($db, 'SELECT pg_current_wal_lsn()');
	my $users_before = $node->safe_psql($db, 'SELECT count(*) FROM users');
	my $pgbench = start_pgbench($node, $db, '-c', $clients, '-j', '2', '-T', $seconds, '-M', 'prepared',
		'-f', "$work/$variant-signup.sql\@9", '-f', "$work/$variant-rollback.sql\@1");
	if ($variant eq 'reindex') {
		# Rebuilt while the clients sign up: writers are never blocked, and no row may be missed.
		sleep(int(($seconds + 1) / 2));
		$node->safe_psql($db, 'REINDEX INDEX CONCURRENTLY users_email_bloom');
	}
	my ($ok, $out, $err) = finish_pgbench($pgbench);
	ok($ok && "$out$err" !~ /aborted|error/i, "$variant: $clients pgbench clients sign up for $seconds s without an error")
		or diag("$out$err");
	my $wal_after = $node->safe_psql($db, 'SELECT pg_current_wal_lsn()');
	(my $seen = $check{$variant}) =~ s/EMAIL/r.email/g;
	(my $found = $check{$variant}) =~ s/EMAIL/email/g;
	my ($committed, $rolled, $rolled_seen, $false_negatives, $wal) = split /\|/, $node->safe_psql($db, qq{
		SELECT count(*) - $users_before,
		       (SELECT count(*) FROM rolled_back),
		       (SELECT count(*) FROM rolled_back r WHERE $seen),
		       count(*) FILTER (WHERE NOT $found),
		       pg_wal_lsn_diff('$wal_after', '$wal_before')
		FROM users});
	cmp_ok($committed, '>', 0, "$variant: signups committed ($committed)");
	is($false_negatives, '0', "$variant: every committed email is found in its filter");
	note(sprintf('%-11s %10.0f %14.0f %10s %12s %16s %16s', $variant, $committed / $seconds,
		$wal / ($committed + $rolled || 1), $committed, $rolled, $rolled_seen, $false_negatives));
	$node->safe_psql('postgres', "DROP DATABASE $db");
}

$node->stop;
done_testing();
