# bloom_index_verify against damage made on purpose, and checks on a hot standby while it replays.
#
# 1. The bits of one data page cleared in the index's file (the server stopped): the page is
#    still a valid page, so checks answer "absent" for keys placed there; bloom_index_verify
#    finds it and names a row whose key is missing (XX002). A REINDEX repairs it.
# 2. A standby with a tiny shared_buffers replaying a primary that inserts and checkpoints every
#    0.2 s (so most changes arrive as full-page images, replayed into buffers that were just
#    evicted), while 4 sessions on the standby check rows the standby already sees: every check
#    answers true and none fails (no "corrupted page" from a page read while redo fills it).
#   BLOOMFILTER_STANDBY_SECONDS   how long the standby is checked (15)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use BloomfilterTAP;

my $page_size = 8192;
my $bits_start = 24;    # MAXALIGN(SizeOfPageHeaderData): the filter's bytes follow the header

my $node = new_node('verify');
$node->safe_psql('postgres', q{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL);
	INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000);
	CREATE INDEX users_lower_bloom ON users USING bloomfilter (lower(email)) WITH (capacity = 100000)
		WHERE id % 2 = 0;
});
is($node->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') || ' ' || bloom_index_verify('users_lower_bloom')}),
	'20000 10000', 'bloom_index_verify checks every row, and the partial index the rows of its predicate');

# 3,000 bytes of page 1's bits cleared: a few hundred keys lose bits.
my $file = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('users_email_bloom')");
$node->stop;
open(my $fh, '+<', $file) or die "open $file: $!";
binmode $fh;
seek($fh, $page_size + $bits_start, 0) or die "seek: $!";
print $fh "\0" x 3000 or die "write: $!";
close $fh or die "close: $!";
$node->start;

my $missing = $node->safe_psql('postgres', q{SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email)});
cmp_ok($missing, '>', 0, "cleared bits make checks answer absent for committed rows ($missing rows)");
my ($stdout, $stderr) = ('', '');
$node->psql('postgres', q{SELECT bloom_index_verify('users_email_bloom')}, stdout => \$stdout, stderr => \$stderr,
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($stderr, qr/ERROR:\s+XX002: bloomfilter index "users_email_bloom" lacks the key of row \(\d+,\d+\) of table "users"/,
	'bloom_index_verify reports the first row whose key is missing, with data_corrupted');
my ($row) = $stderr =~ /row (\(\d+,\d+\))/;
is($node->safe_psql('postgres', qq{SELECT bloom_index_contains('users_email_bloom', email) FROM users WHERE ctid = '$row'}),
	'f', "the row it names ($row) is one a check misses");
is($node->safe_psql('postgres', q{SELECT bloom_index_verify('users_lower_bloom')}), '10000',
	'the other index of the table verifies');
$node->safe_psql('postgres', 'REINDEX INDEX users_email_bloom');
is($node->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom')}), '20000', 'after REINDEX it verifies');
$node->stop;

# 2. Checks on a standby during replay.
my $seconds = $ENV{BLOOMFILTER_STANDBY_SECONDS} // 15;
my $primary = new_node('reads_primary', [ 'wal_level = replica', 'full_page_writes = on' ], allows_streaming => 1);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION bloomfilter;
	CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL);
	INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 200000);
});
$primary->backup('reads_backup');
my $standby = PostgreSQL::Test::Cluster->new('reads_standby');
$standby->init_from_backup($primary, 'reads_backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "shared_buffers = 128kB\nlog_statement = none\n");
$standby->start;
$primary->wait_for_catchup($standby);

my $work = $primary->basedir;
append_to_file("$work/insert.sql", q{INSERT INTO users (email) SELECT 'new' || :client_id || '-' || g || '-' || random() || '@mail.com' FROM generate_series(1, 20) g;
});
append_to_file("$work/checkpoint.sql", q{CHECKPOINT;
\sleep 200 ms
});
# A check answering false for a row the standby sees divides by zero: pgbench reports it.
append_to_file("$work/check.sql", q{\set n random(1, 20000)
SELECT 1 / (bloom_index_contains('users_email_bloom', email))::int FROM users WHERE id = :n;
SELECT count(*) FROM (SELECT email FROM users ORDER BY id DESC LIMIT 50) AS recent
WHERE 1 / (bloom_index_contains('users_email_bloom', email))::int = 1;
});
my $writers = start_pgbench($primary, 'postgres', '-c', '2', '-T', $seconds, '-f', "$work/insert.sql");
my $checkpoints = start_pgbench($primary, 'postgres', '-c', '1', '-T', $seconds, '-f', "$work/checkpoint.sql");
my $checkers = start_pgbench($standby, 'postgres', '-c', '4', '-j', '2', '-T', $seconds, '-f', "$work/check.sql");
my ($ok, $out, $err) = finish_pgbench($checkers);
finish_pgbench($writers);
finish_pgbench($checkpoints);
ok($ok, 'the checks on the standby never failed: no false answer, no corrupted page') or diag($err);
my ($transactions) = $out =~ /number of transactions actually processed: (\d+)/;
cmp_ok($transactions // 0, '>', 0, 'checks ran on the standby during replay (' . ($transactions // 0) . ' transactions of 51 checks)');
my ($failed) = $out =~ /number of failed transactions: (\d+)/;
is($failed // 0, 0, 'no failed transaction');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') = count(*) FROM users}), 't',
	'after replay, bloom_index_verify on the standby finds every row');
ok(!$standby->log_contains('XX002|corrupted page'), 'the standby logged no corrupted page');
$standby->stop;
$primary->stop;
done_testing();
