# bloom_agg within work_mem: 20M distinct keys with work_mem = 1MB spill to temporary files, give
# the bytes work_mem = 1GB gives, and keep the backend's peak memory under the result filter's
# size plus 16 MB; the same for the leader of a parallel plan over 5M keys; a temp_file_limit
# below what the spill needs is the server's own error, and no temporary file is left.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('aggregate_spill', [ 'max_parallel_workers_per_gather = 0', 'log_temp_files = 0' ]);
$node->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

my $keys = 20_000_000;
# The keys one at a time (a ProjectSet: generate_series in FROM would keep its rows in a
# tuplestore).
my $input = "(SELECT generate_series(1::bigint, $keys) AS k) s";

# The backend's peak RSS grows by no more than the result filter plus 16 MB over what
# count(k) over the same input needs. (The filter's size is asked for afterwards: bloom_empty,
# folded at planning time, would take memory of its own before the peak is read.)
my ($base, $peak) = split /\|/, $node->safe_psql('postgres', qq{
SET work_mem = '1MB';
SELECT pg_backend_pid() AS pid \\gset
SELECT count(k) FROM $input \\g /dev/null
SELECT (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024 AS base \\gset
SELECT bloom_agg(k) IS NULL FROM $input \\g /dev/null
SELECT :base, (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024;
});
my $filter_bytes = $node->safe_psql('postgres', "SELECT bytes FROM bloom_info(bloom_empty($keys))");
my $bound = $filter_bytes + 16 * 1048576;
cmp_ok($peak - $base, '<=', $bound, sprintf(
	'bloom_agg of %d distinct keys, work_mem = 1MB: peak RSS grew by %.1f MiB; bound: filter %.1f MiB + 16 MiB',
	$keys, ($peak - $base) / 1048576, $filter_bytes / 1048576));

my $log_offset = -s $node->logfile;
my $spilled = $node->safe_psql('postgres', "SET work_mem = '1MB'; SELECT md5(bloom_agg(k)::text) FROM $input");
my $temp_log = slurp_file($node->logfile, $log_offset);
my @files = $temp_log =~ /temporary file: path "[^"]+", size (\d+)/g;
my $total = 0;
$total += $_ for @files;
ok(@files >= 1, sprintf('work_mem = 1MB spilled: %d temporary file(s), %.1f MiB', scalar @files, $total / 1048576));
my $in_memory = $node->safe_psql('postgres', "SET work_mem = '1GB'; SELECT md5(bloom_agg(k)::text) FROM $input");
is($spilled, $in_memory, 'the spilled result is the in-memory result, byte for byte');

# Parallel, 2 workers over a table of 5M keys: each worker's spilled state reaches the leader as
# a file, so the leader's peak memory is bound the same way, and the bytes are the same.
my $parallel_keys = 5_000_000;
$node->safe_psql('postgres',
	"CREATE TABLE keys AS SELECT generate_series(1::bigint, $parallel_keys) AS k; VACUUM ANALYZE keys");
my $parallel = q{SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; SET work_mem = '1MB';};
like($node->safe_psql('postgres', "$parallel EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT bloom_agg(k) FROM keys"),
	qr/Workers Launched: 2/, 'the parallel plan launches 2 workers');
# The leader takes no share of the scan here: the shared buffers it would read count in its RSS.
my ($parallel_base, $parallel_peak) = split /\|/, $node->safe_psql('postgres', qq{
$parallel SET parallel_leader_participation = off;
SELECT pg_backend_pid() AS pid \\gset
SELECT count(k) FROM keys \\g /dev/null
SELECT (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024 AS base \\gset
SELECT bloom_agg(k) IS NULL FROM keys \\g /dev/null
SELECT :base, (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024;
});
my $parallel_filter = $node->safe_psql('postgres', "SELECT bytes FROM bloom_info(bloom_empty($parallel_keys))");
cmp_ok($parallel_peak - $parallel_base, '<=', $parallel_filter + 16 * 1048576, sprintf(
	'bloom_agg of %d keys, 2 workers, work_mem = 1MB: the leader\'s peak RSS grew by %.1f MiB; bound: filter %.1f MiB + 16 MiB',
	$parallel_keys, ($parallel_peak - $parallel_base) / 1048576, $parallel_filter / 1048576));
$log_offset = -s $node->logfile;
is($node->safe_psql('postgres', "$parallel SELECT md5(bloom_agg(k)::text) FROM keys"),
	$node->safe_psql('postgres', "SET work_mem = '1GB'; SELECT md5(bloom_agg(k)::text) FROM keys"),
	'the parallel spilled result is the serial in-memory result, byte for byte');
# Each worker's 1.7M distinct hashes, past what goes inline, reached the leader as a file (the
# server logs each temporary file it deletes: log_temp_files = 0).
my $exported_files = () = slurp_file($node->logfile, $log_offset) =~ /temporary file: path "[^"]*\.fileset\/bloom_agg/g;
cmp_ok($exported_files, '>=', 1, "... the workers' states went to the leader as files ($exported_files)");

# A temp_file_limit below what the spill needs: the server's error, and nothing left behind.
my ($code) = sql_error($node, 'postgres',
	"SET work_mem = '1MB'; SET temp_file_limit = '10MB'; SELECT bloom_agg(k) IS NULL FROM $input");
is($code, '53400', 'temp_file_limit = 10MB: configuration_limit_exceeded');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false)}),
	'0', 'no temporary file left in pgsql_tmp');

# A leader that exits leaves no file exported for it: the directories of its PID whose FileSet
# number has the top bit set go at its exit; others (PostgreSQL's own) are left alone.
my $session = $node->background_psql('postgres');
my ($pid) = split /\|/, $session->query_safe('SELECT pg_backend_pid(), bloom_empty(1) IS NULL');
my $tmp = $node->data_dir . '/base/pgsql_tmp';
mkdir $tmp;
my ($exported, $other) = ("$tmp/pgsql_tmp$pid.2147483649.fileset", "$tmp/pgsql_tmp$pid.5.fileset");
for my $dir ($exported, $other) {
	mkdir $dir or die "mkdir $dir: $!";
	append_to_file("$dir/bloom_agg.0", 'x' x 64);
}
$session->quit;
$node->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)")
	or die 'the session did not exit';
ok(!-e $exported && -e $other, 'at its exit, a session deletes what was exported for it, nothing else');
unlink "$other/bloom_agg.0";
rmdir $other;

$node->stop;
done_testing();
