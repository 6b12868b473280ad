# bloom_agg under GROUP BY within one hash_mem: the states of one bloom_agg in one Agg node
# together keep to work_mem x hash_mem_multiplier, whatever the number and size of the groups.
# HashAggregate's own peak (EXPLAIN ANALYZE's "Memory Usage") stays within 1.1 x hash_mem and the
# backend's peak RSS grows by no more than hash_mem + 16 MiB; the filters are the same bytes at
# every work_mem, hashed or sorted; small groups cost about what their keys cost.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('groupby_memory',
	[ 'max_parallel_workers_per_gather = 0', 'log_temp_files = 0', 'jit = off',
	  'shared_buffers = 512MB' ]);
$node->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

# The rows one at a time (a ProjectSet: generate_series in FROM would keep them in a tuplestore);
# group g gets keys k with k % groups = g, so every group is started within the first rows.
sub input {
	my ($groups, $per_group) = @_;
	my $rows = $groups * $per_group;
	return "(SELECT k % $groups AS g, k FROM (SELECT generate_series(1::bigint, $rows) AS k) s) t";
}

sub vmhwm { return q{(regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024} }

sub hashagg_peak_kb {
	my ($work_mem, $query) = @_;
	my $plan = $node->safe_psql('postgres', qq{SET work_mem = '$work_mem'; SET enable_sort = off;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) $query});
	my ($peak_kb) = $plan =~ /"Peak Memory Usage": (\d+)/;
	return ($peak_kb, $plan);
}

# measure(GROUPS, PER_GROUP, WORK_MEM): HashAggregate's peak memory in kB, and with count(k) in
# place of bloom_agg(k), and the backend's peak
# RSS growth in bytes over the same query with count(k) in place of bloom_agg(k). Hashed: a
# Sort would keep one group at a time.
sub measure {
	my ($groups, $per_group, $work_mem) = @_;
	my $input = input($groups, $per_group);
	my $query = "SELECT g, bloom_agg(k) FROM $input GROUP BY g";
	my ($peak_kb, $plan) = hashagg_peak_kb($work_mem, $query);
	my ($count_kb) = hashagg_peak_kb($work_mem, "SELECT g, count(k) FROM $input GROUP BY g");
	my ($base, $peak) = split /\|/, $node->safe_psql('postgres', qq{
SET work_mem = '$work_mem'; SET enable_sort = off;
SELECT pg_backend_pid() AS pid \\gset
SELECT bloom_contains(bloom_empty(1), 'x') \\g /dev/null
SELECT g, count(k) FROM $input GROUP BY g \\g /dev/null
SELECT @{[vmhwm()]} AS base \\gset
$query \\g /dev/null
SELECT :base, @{[vmhwm()]};
});
	return ($peak_kb, $count_kb, $peak - $base, $plan);
}

my $hash_mem_multiplier = $node->safe_psql('postgres', 'SHOW hash_mem_multiplier');
# The last case is few groups at the smallest work_mem, where HashAggregate's own structures are
# a good part of hash_mem: the states take only what it leaves them.
for my $case ([ 100_000, 100, '4MB', 4096 ], [ 10, 500_000, '1MB', 1024 ], [ 2_000, 1_000, '64kB', 64 ],
	[ 64, 20_000, '64kB', 64 ]) {
	my ($groups, $per_group, $work_mem, $work_mem_kb) = @$case;
	my $hash_mem_kb = $work_mem_kb * $hash_mem_multiplier;
	my ($peak_kb, $count_kb, $growth, $plan) = measure($groups, $per_group, $work_mem);
	ok(defined $peak_kb, "$groups groups x $per_group keys, work_mem = $work_mem: a HashAggregate")
		or diag($plan);
	# At the smallest work_mem HashAggregate's own structures pass hash_mem with count(k) too.
	my $bound_kb = 1.1 * ($count_kb > $hash_mem_kb ? $count_kb : $hash_mem_kb);
	cmp_ok($peak_kb // 1e12, '<=', $bound_kb, sprintf(
		'%d groups x %d keys, work_mem = %s: HashAggregate peak %d kB (count(k): %d kB), bound 1.1 x the larger of hash_mem and count(k)\'s = %d kB',
		$groups, $per_group, $work_mem, $peak_kb // -1, $count_kb // -1, $bound_kb));
	cmp_ok($growth, '<=', $hash_mem_kb * 1024 + 16 * 1048576, sprintf(
		'%d groups x %d keys, work_mem = %s: peak RSS grew by %.1f MiB, bound hash_mem + 16 MiB = %.1f MiB',
		$groups, $per_group, $work_mem, $growth / 1048576, $hash_mem_kb / 1024 + 16));
}

# A parallel leader runs two Agg nodes, its share of the partial aggregate and the final one,
# which finalizes every group of a batch before it resets their states. The table fits in a
# quarter of shared_buffers, so a serial scan first maps all its pages into the backend (shared
# pages count in VmHWM, and the leader's share of them differs from one query to the next).
# The group is a column, whose statistics make the planner aggregate in the workers too.
$node->safe_psql('postgres', q{CREATE TABLE keys AS SELECT k % 1000 AS g, k
	FROM generate_series(1::bigint, 2500000) AS k; VACUUM ANALYZE keys});
my ($leader_base, $leader_peak) = split /\|/, $node->safe_psql('postgres', qq{
SELECT pg_backend_pid() AS pid \\gset
SELECT count(k) FROM keys \\g /dev/null
SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET min_parallel_table_scan_size = 0; SET work_mem = '4MB'; SET enable_sort = off;
SELECT bloom_contains(bloom_empty(1), 'x') \\g /dev/null
SELECT g, count(k) FROM keys GROUP BY g \\g /dev/null
SELECT @{[vmhwm()]} AS base \\gset
SELECT g, bloom_agg(k) FROM keys GROUP BY g \\g /dev/null
SELECT :base, @{[vmhwm()]};
});
like($node->safe_psql('postgres', q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
	SET min_parallel_table_scan_size = 0; SET work_mem = '4MB'; SET enable_sort = off;
	EXPLAIN (COSTS OFF) SELECT g, bloom_agg(k) FROM keys GROUP BY g}),
	qr/Finalize HashAggregate.*Workers Planned: 2.*Partial HashAggregate/s, 'the parallel plan');
cmp_ok($leader_peak - $leader_base, '<=', (4096 * $hash_mem_multiplier + 16 * 1024) * 1024, sprintf(
	'1000 groups x 2500 keys, work_mem = 4MB, 2 workers: the leader\'s peak RSS grew by %.1f MiB, bound hash_mem + 16 MiB = %.1f MiB',
	($leader_peak - $leader_base) / 1048576, 4 * $hash_mem_multiplier + 16));

# At work_mem = 1MB every worker spills, and each of its groups (about 830 distinct keys) goes to
# the leader inline, not as a file of its own: a directory and a file made and deleted for each
# of thousands of groups made such a query 2 to 3 times as slow as count(DISTINCT). The server
# logs every temporary file it deletes (log_temp_files = 0), the exported ones included.
my $log_offset = -s $node->logfile;
my $parallel_digest = $node->safe_psql('postgres', q{SET max_parallel_workers_per_gather = 2;
	SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET work_mem = '1MB';
	SET enable_sort = off;
	SELECT md5(string_agg(g || ':' || md5(f::text), ',' ORDER BY g))
	FROM (SELECT g, bloom_agg(k) AS f FROM keys GROUP BY g) q});
my $log = slurp_file($node->logfile, $log_offset);
my $spilled = () = $log =~ /temporary file: path "[^"]*pgsql_tmp\d+\.\d+"/g;
my $exported = () = $log =~ /temporary file: path "[^"]*\.fileset\/bloom_agg/g;
cmp_ok($spilled, '>', 0, "1000 groups x 2500 keys, work_mem = 1MB, 2 workers: the states spilled ($spilled files)");
is($exported, 0, '... and no group reached the leader as a file');
is($parallel_digest, $node->safe_psql('postgres', q{SET work_mem = '1GB';
	SELECT md5(string_agg(g || ':' || md5(f::text), ',' ORDER BY g))
	FROM (SELECT g, bloom_agg(k) AS f FROM keys GROUP BY g) q}), '... the bytes of work_mem = 1GB, serial');

# Same bytes at every work_mem, hashed and sorted.
sub digest {
	my ($settings, $groups, $per_group) = @_;
	my $input = input($groups, $per_group);
	return $node->safe_psql('postgres', qq{$settings
		SELECT md5(string_agg(g || ':' || md5(f::text), ',' ORDER BY g))
		FROM (SELECT g, bloom_agg(k) AS f FROM $input GROUP BY g) q});
}
for my $case ([ 20_000, 50 ], [ 4, 300_000 ]) {
	my ($groups, $per_group) = @$case;
	my $reference = digest("SET work_mem = '1GB';", $groups, $per_group);
	for my $settings ("SET work_mem = '64kB';", "SET work_mem = '1MB';",
		"SET work_mem = '64kB'; SET enable_hashagg = off;") {
		is(digest($settings, $groups, $per_group), $reference,
			"$groups groups x $per_group keys, $settings: the bytes of work_mem = 1GB");
	}
}

# A small group costs about what its keys cost: the backend's peak RSS over the query with
# bloom_agg(k) against the same with count(k), each in a session of its own, both hashed.
sub peak_growth {
	my ($aggregate) = @_;
	my $query = "SELECT g, $aggregate FROM " . input(10_000, 100) . ' GROUP BY g';
	my ($base, $peak) = split /\|/, $node->safe_psql('postgres', qq{
SET work_mem = '1GB'; SET enable_sort = off;
SELECT pg_backend_pid() AS pid \\gset
SELECT bloom_contains(bloom_empty(1), 'x') \\g /dev/null
SELECT @{[vmhwm()]} AS base \\gset
$query \\g /dev/null
SELECT :base, @{[vmhwm()]};
});
	return $peak - $base;
}
my $count_growth = peak_growth('count(k)');
my $bloom_growth = peak_growth('bloom_agg(k)');
cmp_ok($bloom_growth - $count_growth, '<=', 10_000 * (100 * 16 + 1024), sprintf(
	'10,000 groups x 100 keys: %.1f bytes a key beyond count(k)\'s peak RSS, bound 16 a key + 1 kB a group',
	($bloom_growth - $count_growth) / 1_000_000));

is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false)}),
	'0', 'no temporary file left in pgsql_tmp');
done_testing();
