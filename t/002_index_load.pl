# A bloomfilter index under 8 inserting clients (pgbench): no committed row is ever missing from
# it, while it grows online (ALTER INDEX ... SET (capacity), REINDEX INDEX CONCURRENTLY, writers
# never blocked), and after a SIGKILL of the server in the middle of the inserts.
# Prints "false negatives: <where> <count>" lines for make bench.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('load', [ 'max_connections = 40', 'fsync = on' ]);
create_users($node, 20000);
my $script = $node->basedir . '/signup.sql';
append_to_file($script,
	"INSERT INTO users (email) VALUES ('c' || :client_id || '-' || md5(random()::text || clock_timestamp()::text) || '\@Mail.com');\n");
my $missing = $MISSING_USERS;

# pgbench in the background: 8 clients inserting for SECONDS.
sub start_inserts {
	my ($seconds) = @_;
	return start_pgbench($node, 'postgres', '-c', '8', '-j', '2', '-T', $seconds, '-f', $script);
}
sub count_rows { return $node->safe_psql('postgres', 'SELECT count(*) FROM users'); }

# Growing online: a new capacity, then REINDEX CONCURRENTLY while the clients insert.
my $before = count_rows();
my $run = start_inserts(8);
sleep 2;
$node->safe_psql('postgres', 'ALTER INDEX users_email_bloom SET (capacity = 400000)');
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY users_email_bloom');
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY users_email_ci_bloom');
my $reindexed = count_rows();
my ($ok, $out, $err) = finish_pgbench($run);
ok($ok, 'pgbench ran through both rebuilds, never failing') or diag($err);
my $after = count_rows();
cmp_ok($reindexed, '>', $before, 'rows were inserted while the indexes were rebuilt');
cmp_ok($after, '>', $reindexed, 'and after');
is($node->safe_psql('postgres', q{SELECT capacity FROM bloom_index_info('users_email_bloom')}),
	'400000', 'the rebuilt index has its new capacity');
is($node->safe_psql('postgres',
		q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'users_email_bloom'::regclass}),
	't', 'the rebuilt index is valid');
my $fn_reindex = $node->safe_psql('postgres', $missing);
note("false negatives: concurrent-inserts-and-reindex-concurrently $fn_reindex");
is($fn_reindex, '0', "every committed row is found after REINDEX CONCURRENTLY under load ($after rows)");
is($node->safe_psql('postgres', $VERIFY_USERS), 't|t', 'bloom_index_verify after REINDEX CONCURRENTLY: no key missing');

# SIGKILL while the clients insert: every row committed before the kill is found after recovery.
$run = start_inserts(30);
sleep 3;
my $committed_before_kill = count_rows();
kill9_and_restart($node);
stop_pgbench($run);
my $recovered = count_rows();
cmp_ok($recovered, '>=', $committed_before_kill,
	"recovery kept every row counted before the kill ($committed_before_kill, $recovered after)");
my $fn_crash = $node->safe_psql('postgres', $missing);
note("false negatives: sigkill-under-load $fn_crash");
is($fn_crash, '0', 'every committed row is found after crash recovery');
is($node->safe_psql('postgres', $VERIFY_USERS), 't|t', 'bloom_index_verify after crash recovery: no key missing');

$node->stop;
done_testing();
