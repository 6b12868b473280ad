# One filter over a users table sharded across PostgreSQL nodes: a coordinator whose users table
# is partitioned by home node (bloom_shard(email, 3)) into a local partition and postgres_fdw
# foreign tables on two data nodes (test/multinode/*.sql), and a streaming replica of the
# coordinator.
#   1. bloom_agg runs on the data nodes (EXPLAIN VERBOSE: the aggregate is in the Remote SQL);
#   2. the union of the per-node filters is byte-identical to the filter built over all rows on one
#      node, and so is each of 64 shards built per node and merged per shard;
#   3. the signup pre-check on the coordinator, and the same answers and bytes on the standby;
#   4. signups on both nodes and through the coordinator (pgbench) while seals and merge rounds
#      run: afterwards no committed email is missing from the coordinator's filter, and the filter
#      is byte-identical to a fresh build over all rows (every new email merged exactly once).
# With prove -v it prints build times (distributed against single-node) and the bytes received
# from the nodes, and "row: what|measured|-|-" lines that `make bench` collects.
#   MULTINODE_BENCH=1   the bench's sizes: 1,000,000 users, 5 timing rounds, 10 s of signups
#                       (else 60,000 users, 3 rounds, 6 s); each can be set alone with
#                       MULTINODE_ROWS, MULTINODE_ROUNDS, MULTINODE_SIGNUP_SECONDS.
use strict;
use warnings;
use POSIX qw(ceil);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use BloomfilterTAP;

my $bench = $ENV{MULTINODE_BENCH} ? 1 : 0;
my $rows = $ENV{MULTINODE_ROWS} // ($bench ? 1_000_000 : 60_000);
my $rounds = $ENV{MULTINODE_ROUNDS} // ($bench ? 5 : 3);
my $signup_seconds = $ENV{MULTINODE_SIGNUP_SECONDS} // ($bench ? 10 : 6);
# Room for the table to double, and at least for the test's signups.
my $capacity = $rows * 2 > 200_000 ? $rows * 2 : 200_000;
my $error_rate = 0.01;
my $shards = 64;
# Shards hold a binomial share of the keys: each is sized for its mean plus four standard deviations.
my $shard_capacity = ceil($capacity / $shards + 4 * sqrt($capacity / $shards * (1 - 1 / $shards)));
my ($node_clients, $coordinator_clients) = (3, 2);
my $started_at = time;

# on(NODE, SQL, VARIABLE => VALUE ...): SQL in one psql session on NODE, stopping at the first
# error; its output (unaligned, '|' between fields), and in list context its messages too.
sub on {
	my ($node, $sql, %variables) = @_;
	my ($stdout, $stderr) = ('', '');
	my $ret = $node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr, on_error_stop => 1,
		extra_params => [ map { ('-v', "$_=$variables{$_}") } sort keys %variables ]);
	die $node->name . ": psql failed: $stderr\n$sql\n" if $ret != 0;
	return wantarray ? ($stdout, $stderr) : $stdout;
}
sub section { note("\n== $_[0]"); }
my %filter_variables = (capacity => $capacity, error_rate => $error_rate, rows => $rows);

###############################################################################################
section(($bench ? 'bench' : 'test') . " sizes: $rows users, filter capacity $capacity at error_rate $error_rate");
# TCP on loopback next to the Unix socket: postgres_fdw reaches the data nodes over TCP, where
# measure.sql counts the bytes received from them.
my @settings = ('jit = off', 'max_parallel_workers_per_gather = 0', 'max_wal_size = 4GB',
	'checkpoint_timeout = 30min', q{listen_addresses = '127.0.0.1'});
my %node;
for my $n (1, 2) {
	$node{"node$n"} = new_node("node$n", \@settings);
	on($node{"node$n"}, '\i test/multinode/node.sql', %filter_variables, node => $n);
}
my $coordinator = $node{coordinator} = new_node('coordinator', \@settings, allows_streaming => 1);
on($coordinator, "\\i test/multinode/coordinator.sql\n\\i test/multinode/measure.sql", %filter_variables,
	node1_port => $node{node1}->port, node2_port => $node{node2}->port);

# The streaming replica: a base backup of the coordinator, a replication slot, hot standby.
$coordinator->safe_psql('postgres', q{SELECT pg_create_physical_replication_slot('multinode_standby')});
$coordinator->backup('standby_backup');
my $standby = $node{standby} = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($coordinator, 'standby_backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'multinode_standby'\n");
$standby->start;
is(on($standby, 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');

for my $name (qw(coordinator node1 node2 standby)) {
	note(sprintf('%-12s PostgreSQL %s, port %s', $name, on($node{$name}, 'SHOW server_version'), $node{$name}->port));
}
note(on($coordinator, q{SELECT format('users: %s rows (node0 %s local, node1 %s, node2 %s, as seen from the coordinator)',
	count(*), count(*) FILTER (WHERE bloom_shard(email, 3) = 0), count(*) FILTER (WHERE bloom_shard(email, 3) = 1),
	count(*) FILTER (WHERE bloom_shard(email, 3) = 2)) FROM users}));
my $filter_bytes = on($coordinator, "SELECT bytes FROM bloom_info(bloom_empty($capacity, $error_rate))");
my $shard_bytes = on($coordinator, "SELECT bytes FROM bloom_info(bloom_empty($shard_capacity, $error_rate))");
note("filter: $filter_bytes bytes; $shards shards of capacity $shard_capacity, $shard_bytes bytes each");

# The statements of the build: per-node aggregates (grouped by the partition key, so each runs
# whole on its partition's node) and their union on the coordinator; the same per shard.
my $build_merged = "SELECT bloom_union_agg(f) FROM (
    SELECT bloom_shard(email, 3) AS node, bloom_agg(email, $capacity, $error_rate) AS f FROM users GROUP BY 1
  ) AS per_node";
my $build_sharded = "SELECT shard, bloom_union_agg(f) FROM (
    SELECT bloom_shard(email, 3) AS node, bloom_shard(email, $shards) AS shard,
           bloom_agg(email, $shard_capacity, $error_rate) AS f
    FROM users GROUP BY 1, 2
  ) AS per_node GROUP BY shard";
(my $insert_merged = $build_merged) =~ s/^SELECT /SELECT 1, /;

###############################################################################################
section('pushdown: EXPLAIN (VERBOSE, COSTS OFF) on the coordinator');
sub explain_plan { return on($coordinator, "EXPLAIN (VERBOSE, COSTS OFF) $_[0]"); }
# expect_lines(PLAN, TEXT, COUNT, WHAT): COUNT lines of PLAN hold TEXT.
sub expect_lines {
	my ($plan, $text, $count, $what) = @_;
	my $found = grep { index($_, $text) >= 0 } split /\n/, $plan;
	is($found, $count, "$what: $count plan lines with '$text'") or diag($plan);
}

note('-- 0. before the nodes have statistics on bloom_shard(email, 3) (for information, not checked):');
my $plan = explain_plan($build_merged);
if ($plan =~ /Remote SQL: SELECT public\.bloom_shard\(email, 3\), public\.bloom_agg/) {
	note('   the aggregate is already pushed down');
} else {
	note("   the coordinator fetches the rows: with use_remote_estimate the node's guess of the groups decides,\n"
		. "   and without statistics on the expression it guesses far too many\n$plan");
}
on($node{$_}, '\i test/multinode/node-statistics.sql') for qw(node1 node2);
$plan = on($coordinator, "SET enable_partitionwise_aggregate = off;\nEXPLAIN (VERBOSE, COSTS OFF) $build_merged");
note("-- 0b. enable_partitionwise_aggregate = off: the grouping runs above the Append, on the coordinator\n$plan");
expect_lines($plan, 'Remote SQL: SELECT email FROM public.users', 2, 'partitionwise aggregation off');
on($coordinator, 'ANALYZE users');

$plan = explain_plan("INSERT INTO filters $insert_merged");
note("-- 1. the merged filter: bloom_agg per node, grouped by the partition key; bloom_union_agg on the coordinator\n$plan");
expect_lines($plan, "Remote SQL: SELECT public.bloom_shard(email, 3), public.bloom_agg(email, ${capacity}::bigint", 2, 'merged build');
expect_lines($plan, 'Async Foreign Scan', 2, 'merged build');

$plan = explain_plan("INSERT INTO filter_shards $build_sharded");
note("-- 2. $shards shards: bloom_agg per node and shard; bloom_union_agg per shard on the coordinator\n$plan");
expect_lines($plan, "Remote SQL: SELECT public.bloom_shard(email, 3), public.bloom_shard(email, $shards), public.bloom_agg(email, ${shard_capacity}::bigint",
	2, 'sharded build');

$plan = explain_plan("SELECT bloom_agg(email, $capacity, $error_rate) FROM users_node1");
note("-- 3. one foreign partition queried directly\n$plan");
expect_lines($plan, 'Relations: Aggregate on (public.users_node1)', 1, 'direct partition');
expect_lines($plan, "Remote SQL: SELECT public.bloom_agg(email, ${capacity}::bigint", 1, 'direct partition');

$plan = explain_plan("SELECT bloom_agg(email, $capacity, $error_rate) FROM users");
note("-- 4. no GROUP BY on the partition key (for information, not checked)\n$plan\n"
	. ($plan =~ /Remote SQL: SELECT email FROM public\.users/
		? '   (the rows are fetched: partial aggregates are not sent to the nodes)'
		: '   (this server sends partial aggregates to the nodes)'));

$plan = explain_plan('SELECT bloom_union_agg(f), max(batch), count(*), sum(emails) FROM filter_outbox_node1 WHERE batch > 0');
note("-- 5. a merge round's read of a node's sealed deltas\n$plan");
expect_lines($plan, 'Remote SQL: SELECT public.bloom_union_agg(f), max(batch), count(*), sum(emails) FROM public.filter_outbox WHERE ((batch > 0))',
	1, 'merge read');

my $homed = on($node{node1}, 'SELECT email FROM users ORDER BY email LIMIT 1');
$plan = explain_plan("SELECT 1 FROM users WHERE email = '$homed' AND bloom_shard(email, 3) = bloom_shard('$homed'::text, 3)");
note("-- 6. the pre-check's lookup for a \"probably taken\" email homed at node1: one partition, by its key\n$plan");
expect_lines($plan, 'Remote SQL:', 1, 'pre-check lookup');
expect_lines($plan, 'Foreign Scan on public.users_node1', 1, 'pre-check lookup');

###############################################################################################
section('byte identity: distributed builds against the build over all rows on one node');
on($coordinator, "INSERT INTO filters $insert_merged");
on($coordinator, "INSERT INTO filter_shards $build_sharded");
# All rows on one node: a copy of users in a plain table on the coordinator.
on($coordinator, "CREATE TABLE users_all AS SELECT email FROM users;\nVACUUM ANALYZE users_all");
my ($same, $all_rows, $bytes, $digest) = split /\|/, on($coordinator, "
  SELECT d.f::bytea = s.f::bytea, (SELECT count(*) FROM users_all), length(d.f::bytea), md5(d.f::bytea)
  FROM filters d, (SELECT bloom_agg(email, $capacity, $error_rate) AS f FROM users_all) s WHERE d.id = 1");
note("merged filter (bloom_union_agg of 3 per-node bloom_agg): $bytes bytes, md5 $digest");
is($same, 't', "the merged filter equals bloom_agg over the $all_rows rows of users_all on the coordinator");
my ($shard_count, $same_shards) = split /\|/, on($coordinator, "
  SELECT count(*), count(*) FILTER (WHERE d.f::bytea = s.f::bytea)
  FROM filter_shards d FULL JOIN (SELECT bloom_shard(email, $shards) AS shard,
      bloom_agg(email, $shard_capacity, $error_rate) AS f FROM users_all GROUP BY 1) s USING (shard)");
is("$same_shards of $shard_count", "$shards of $shards", 'sharded: every shard byte-identical to the single-node build per shard');
note(on($coordinator, "SELECT format('shards built on each node: node0 %s, node1 %s, node2 %s (the home and the shard come from one hash: each node holds a run of shards)',
    count(DISTINCT shard) FILTER (WHERE node = 0), count(DISTINCT shard) FILTER (WHERE node = 1),
    count(DISTINCT shard) FILTER (WHERE node = 2))
  FROM (SELECT bloom_shard(email, 3) AS node, bloom_shard(email, $shards) AS shard FROM users_all) s"));
my $auto_error = '';
my $auto_ret = $coordinator->psql('postgres',
	'SELECT bloom_union_agg(f) FROM (SELECT bloom_shard(email, 3), bloom_agg(email) AS f FROM users GROUP BY 1) s',
	stderr => \$auto_error);
isnt($auto_ret, 0, "auto-sized per-node filters (bloom_agg(email)) cannot be merged: $auto_error");

###############################################################################################
section("build times and bytes received from the nodes: median of $rounds rounds after a warm-up");
# Builds run serially (max_parallel_workers_per_gather = 0 on every server) except single_2_workers.
# The parts are timed alone: each node's aggregate as the coordinator receives it, and the merge.
on($coordinator, "CREATE STATISTICS users_all_shard ON (bloom_shard(email, $shards)) FROM users_all;
ANALYZE users_all;
CREATE TABLE build_parts AS SELECT bloom_shard(email, 3) AS node, bloom_agg(email, $capacity, $error_rate) AS f
  FROM users GROUP BY 1");
# md5 of the result, to compare builds without printing them; for a foreign partition it is taken
# outside the aggregate's subquery, else postgres_fdw would send md5 to the node too.
my %timed = (
	single => "SELECT md5(bloom_agg(email, $capacity, $error_rate)::bytea) FROM users_all",
	single_2_workers => "SELECT md5(bloom_agg(email, $capacity, $error_rate)::bytea) FROM users_all",
	distributed => "SELECT md5(($build_merged)::bytea)",
	in_turn => "SELECT md5(($build_merged)::bytea)",
	fetched => "SELECT md5(bloom_agg(email, $capacity, $error_rate)::bytea) FROM users",
	merge => 'SELECT md5(bloom_union_agg(f)::bytea) FROM build_parts',
	single_sharded => "SELECT md5(string_agg(md5(f::bytea), ',' ORDER BY shard)) FROM (
		SELECT bloom_shard(email, $shards) AS shard, bloom_agg(email, $shard_capacity, $error_rate) AS f
		FROM users_all GROUP BY 1) s",
	distributed_sharded => "SELECT md5(string_agg(md5(bloom_union_agg::bytea), ',' ORDER BY shard)) FROM ($build_sharded) s",
	map { ("part_node$_" => "SELECT md5(f::bytea) FROM (SELECT bloom_agg(email, $capacity, $error_rate) AS f FROM users_node$_) s") } 0 .. 2);
my @kinds = qw(single single_2_workers distributed in_turn fetched part_node0 part_node1 part_node2 merge
	single_sharded distributed_sharded);
my $script = "SET enable_partitionwise_aggregate = on;\n";
for my $round (0 .. $rounds) {
	for my $kind (@kinds) {
		$script .= "SET max_parallel_workers_per_gather = 2;\n" if $kind eq 'single_2_workers';
		$script .= "SET enable_async_append = off;\n" if $kind eq 'in_turn';
		(my $quoted = $timed{$kind}) =~ s/'/''/g;
		$script .= "SELECT $round, '$kind', * FROM measure('$quoted');\n";
		$script .= "RESET max_parallel_workers_per_gather; RESET enable_async_append;\n";
	}
}
# The rounds after the warm-up: round|kind|ms|bytes|md5.
my @measured = grep { $_->[0] > 0 } map { [ split /\|/ ] } split /\n/, on($coordinator, $script);
for my $group ([qw(single single_2_workers distributed in_turn fetched merge)], [qw(single_sharded distributed_sharded)]) {
	my %kinds = map { $_ => 1 } @$group;
	my %digests = map { $_->[4] => 1 } grep { $kinds{ $_->[1] } } @measured;
	is(scalar(keys %digests), 1, "every way of building one filter gives the same bytes (@$group)");
}
sub median {
	my @v = sort { $a <=> $b } @_;
	return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}
sub ms { my ($kind) = @_; return sprintf('%.1f', median(map { $_->[2] } grep { $_->[1] eq $kind } @measured)); }
sub received { my ($kind) = @_; return sprintf('%.0f', median(map { $_->[3] } grep { $_->[1] eq $kind } @measured)); }
sub ratio { return sprintf('%.3f', $_[0] / $_[1]); }
# Nodes on machines of their own would wait for the slowest part, then merge.
my ($slowest) = sort { $b <=> $a } map { ms("part_node$_") } 0 .. 2;
my $separate_ms = sprintf('%.1f', $slowest + ms('merge'));
my $email_bytes = on($coordinator, 'SELECT sum(octet_length(email)) FROM users_all WHERE bloom_shard(email, 3) <> 0');
my ($workers) = on($coordinator, "SET max_parallel_workers_per_gather = 2;\nEXPLAIN $timed{single_2_workers}")
	=~ /Workers Planned: (\d+)/;
$workers //= 0;
my $load = (split ' ', slurp_file('/proc/loadavg'))[0];
note(join("\n", sprintf('%-20s %10s %16s', qw(build ms bytes_received)),
	map { sprintf('%-20s %10s %16s', $_, ms($_), received($_)) } @kinds));
note("single: bloom_agg over users_all, all rows in one table on the coordinator (single_2_workers: the
  same with $workers parallel workers planned); distributed: each node's bloom_agg pushed down, the
  nodes at once (async Append), bloom_union_agg on the coordinator; in_turn: the same with
  enable_async_append = off; fetched: no GROUP BY on the partition key, the rows come to the
  coordinator; part_node*: one partition's bloom_agg alone, as the coordinator receives it; merge:
  bloom_union_agg of the 3 per-node filters stored on the coordinator. Sharded: $shards shards per node
  and their union per shard. All three servers share this machine (load average now $load);
  nodes on machines of their own would take about the slowest part plus the merge, $separate_ms ms.
  The nodes' emails are $email_bytes bytes; each node's filter travels as hex text, twice its
  $filter_bytes bytes.");

###############################################################################################
section('signup pre-check on the coordinator and on its streaming replica');
my $step = int($rows / 1000);
my $precheck_sql = "
WITH candidates AS (
  SELECT 'user' || g || '\@mail.com' AS email, true AS registered FROM generate_series(1, $rows, $step) AS g
  UNION ALL
  SELECT 'new' || g || '\@mail.com', false FROM generate_series(1, 1000) AS g
), answers AS (
  SELECT c.*, bloom_contains((SELECT f FROM filters WHERE id = 1), c.email) AS probably,
         email_taken(c.email) AS taken
  FROM candidates c
)
SELECT count(*) FILTER (WHERE registered), count(*) FILTER (WHERE registered AND taken),
       count(*) FILTER (WHERE NOT registered), count(*) FILTER (WHERE NOT registered AND taken),
       count(*) FILTER (WHERE NOT registered AND probably),
       md5(string_agg(probably::text || '/' || taken::text, ',' ORDER BY email))
FROM answers";
my $filters_digest_sql = q{SELECT md5((SELECT f FROM filters WHERE id = 1)::bytea) || ' '
  || md5((SELECT string_agg(md5(f::bytea), ',' ORDER BY shard) FROM filter_shards))};
my $answers = on($coordinator, $precheck_sql);
my ($registered, $registered_taken, $fresh, $fresh_taken, $fresh_probably) = split /\|/, $answers;
note("coordinator: $registered_taken of $registered registered emails taken; $fresh_taken of $fresh new emails taken,\n"
	. "  $fresh_probably of them asked their home node (filter false positives)");
is("$registered_taken $fresh_taken", "$registered 0", 'the pre-check finds every registered email taken and no new one');
$coordinator->wait_for_catchup($standby);
is(on($standby, $precheck_sql), $answers, 'the standby answers the pre-check the same');
is(on($standby, $filters_digest_sql), on($coordinator, $filters_digest_sql), 'the standby holds the same filter and shard bytes');
# A registered email is refused by the pre-check; one just signed up on node1 and not merged yet
# passes the stale filter and is refused by its home node's primary key.
my $registered_email = on($coordinator, 'SELECT email FROM users_node2 ORDER BY email LIMIT 1');
my $stale_email = on($node{node1}, q{INSERT INTO users (email) VALUES (homed_email('not-merged-yet', 1)) RETURNING email});
for my $email ($registered_email, $stale_email) {
	my (undef, $notice) = on($coordinator, "DO \$\$ BEGIN CALL sign_up('$email');
		RAISE EXCEPTION 'sign_up accepted %', '$email';
		EXCEPTION WHEN unique_violation THEN RAISE NOTICE 'refused %: %', '$email', SQLERRM; END \$\$");
	like($notice, qr/refused \Q$email\E/, "sign_up('$email') is refused");
}

###############################################################################################
section("keeping it current: $signup_seconds s of signups on node1, node2 ($node_clients clients each) and the coordinator ($coordinator_clients), seals and merge rounds meanwhile");
my $work = $coordinator->basedir;
my $stop = "$work/stop";
# loop_in_background(INTERVAL, CODE): CODE every INTERVAL seconds in a child process until $stop
# exists. The child leaves with _exit: the nodes belong to the parent, whose END block stops them.
sub loop_in_background {
	my ($interval, $code) = @_;
	my $pid = fork() // die "fork: $!";
	return $pid if $pid;
	while (!-e $stop) {
		eval { $code->(); 1 } or append_to_file("$work/errors.log", $@);
		sleep($interval);
	}
	POSIX::_exit(0);
}
# Each node (and the coordinator for its own partition) seals its delta every 0.2 s, as cron
# would; two merge loops on the coordinator run rounds every 0.3 s, so rounds also overlap.
my @loops = (loop_in_background(0.2, sub {
	for my $name (qw(node1 node2 coordinator)) {
		append_to_file("$work/seals.log", on($node{$name}, 'SELECT filter_delta_seal()') . "\n");
	}
}));
push @loops, loop_in_background(0.3, sub {
	append_to_file("$work/merges.log", on($coordinator, 'CALL filter_merge_round()') . "\n");
}) for 1 .. 2;
my %pgbench;
for my $n (1, 2) {
	$pgbench{"node$n"} = start_pgbench($node{"node$n"}, 'postgres', '-c', $node_clients, '-j', '1',
		'-T', $signup_seconds, '-M', 'prepared', '-D', "node=$n",
		'-f', 'test/multinode/node-signup.sql@9', '-f', 'test/multinode/node-rollback.sql@1');
}
$pgbench{coordinator} = start_pgbench($coordinator, 'postgres', '-c', $coordinator_clients, '-j', '1',
	'-T', $signup_seconds, '-M', 'prepared',
	'-f', 'test/multinode/coordinator-signup.sql@9', '-f', 'test/multinode/coordinator-rollback.sql@1');
my %tps;
for my $name (qw(node1 node2 coordinator)) {
	my ($ok, $out, $err) = finish_pgbench($pgbench{$name});
	ok($ok && "$out$err" !~ /aborted|error/i, "pgbench on $name signs up without an error") or diag("$out$err");
	($tps{$name}) = $out =~ /^tps = (\d+)/m;
}
append_to_file($stop, '');
waitpid($_, 0) for @loops;
my $errors = -e "$work/errors.log" ? slurp_file("$work/errors.log") : '';
is($errors, '', 'every seal and merge round during the signups succeeded');
my $seals_during = grep { /^\d/ } split /\n/, slurp_file("$work/seals.log");
my ($rounds_during, $batches_during) = (0, 0);
for (split /\n/, slurp_file("$work/merges.log")) {
	$rounds_during++;
	$batches_during += (split /\|/)[0] || 0;
}
# The last round: seal everything committed, merge it.
on($node{$_}, 'SELECT filter_delta_seal()') for qw(node1 node2 coordinator);
my ($last_batches, $last_emails) = split /\|/, on($coordinator, 'CALL filter_merge_round()');
note("during the signups: $seals_during seals made a batch, $rounds_during merge rounds merged $batches_during batches\n"
	. "after them: a last seal on each node and a last round merged $last_batches batches, $last_emails emails\n"
	. join("\n", map { sprintf('%-12s signups %6s tps (pgbench, 1 in 10 rolled back)', $_, $tps{$_} // '?') }
		qw(node1 node2 coordinator)));

# Every source's committed and rolled-back signups, checked against the coordinator's filter.
on($coordinator, q{
  CREATE FOREIGN TABLE rolled_back_node1 (email text) SERVER node1 OPTIONS (table_name 'rolled_back');
  CREATE FOREIGN TABLE rolled_back_node2 (email text) SERVER node2 OPTIONS (table_name 'rolled_back')});
my @sources = map { [ split /\|/ ] } split /\n/, on($coordinator, q{
  WITH f AS (SELECT f FROM filters WHERE id = 1),
  committed AS (
    SELECT CASE WHEN email LIKE 'n1c%' OR email LIKE 'not-merged-yet%' THEN 'node1' WHEN email LIKE 'n2c%' THEN 'node2'
                WHEN email LIKE 'co%' THEN 'coordinator' ELSE 'initial' END AS source,
           count(*) AS n, count(*) FILTER (WHERE NOT bloom_contains(f.f, u.email)) AS missing
    FROM users u, f GROUP BY 1),
  rolled AS (
    SELECT source, count(*) AS n, count(*) FILTER (WHERE bloom_contains(f.f, r.email)) AS seen
    FROM (SELECT 'node1' AS source, email FROM rolled_back_node1 UNION ALL
          SELECT 'node2', email FROM rolled_back_node2 UNION ALL
          SELECT 'coordinator', email FROM rolled_back) r, f GROUP BY 1)
  SELECT c.source, c.n, coalesce(r.n, 0), coalesce(r.seen, 0), c.missing
  FROM committed c LEFT JOIN rolled r USING (source) ORDER BY c.source});
note(join("\n", sprintf('%-12s %10s %12s %16s %16s', qw(source committed rolled_back rolled_back_seen false_negatives)),
	map { sprintf('%-12s %10s %12s %16s %16s', @$_) } @sources));
my ($false_negatives, $signed_up) = (0, 0);
for (@sources) {
	$false_negatives += $_->[4];
	$signed_up += $_->[1] if $_->[0] ne 'initial';
}
cmp_ok($signed_up, '>', 0, "signups committed ($signed_up)");
is($false_negatives, 0, "every committed email ($signed_up new, $rows initial) is found in the coordinator's filter");
my $leftover = 0;
$leftover += on($node{$_}, 'SELECT (SELECT count(*) FROM filter_pending) + (SELECT count(*) FROM filter_outbox)')
	for qw(node1 node2 coordinator);
is($leftover, 0, 'no pending email or outbox batch is left after the last round');
my ($exact, $inserted, $rows_now) = split /\|/, on($coordinator, "
  SELECT f.f::bytea = ($build_merged)::bytea, (bloom_info(f.f)).inserted, (SELECT count(*) FROM users)
  FROM filters f WHERE f.id = 1");
is($exact, 't', "the merged filter equals a fresh distributed build over the $rows_now rows now (inserted = $inserted: each email merged once)");
$coordinator->wait_for_catchup($standby);
is(on($standby, $filters_digest_sql), on($coordinator, $filters_digest_sql), 'after the signups the standby holds the same filter bytes');
is(on($standby, $precheck_sql), on($coordinator, $precheck_sql), 'and answers the pre-check the same');

# Rows for make bench (the "e) multinode: " prefix is what bench/run.sh replaces).
my @rows = (
	[ 'distributed build time / single-node build time', ratio(ms('distributed'), ms('single')) ],
	[ "distributed / single-node with $workers parallel workers", ratio(ms('distributed'), ms('single_2_workers')) ],
	[ 'distributed, nodes in turn / single-node', ratio(ms('in_turn'), ms('single')) ],
	[ 'rows fetched to the coordinator / single-node', ratio(ms('fetched'), ms('single')) ],
	[ 'slowest part + merge / single-node (separate machines)', ratio($separate_ms, ms('single')) ],
	[ 'sharded distributed build / single-node', ratio(ms('distributed_sharded'), ms('single_sharded')) ],
	[ "distributed build ms ($rows rows)", ms('distributed') ],
	[ "single-node build ms ($rows rows)", ms('single') ],
	[ 'bytes from the nodes, filters', received('distributed') ],
	[ 'bytes from the nodes, rows fetched', received('fetched') ],
	[ 'bytes, filters / rows fetched', ratio(received('distributed'), received('fetched') || 1) ],
	[ "bytes from the nodes, $shards shards", received('distributed_sharded') ]);
section('rows for make bench');
note("row: e) multinode: $_->[0]|$_->[1]|-|-") for @rows;
section(sprintf('multinode: %s sizes, %d s', $bench ? 'bench' : 'test', time - $started_at));

$_->stop for values %node;
done_testing();
