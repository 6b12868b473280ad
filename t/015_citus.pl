# The index functions on Citus (distributed PostgreSQL): a coordinator and two workers, users
# distributed by email in 8 shards, 10,000 emails, CREATE INDEX users_email_bloom ... USING
# bloomfilter on the coordinator (Citus creates it on every shard, as users_email_bloom_<shard id>).
#   1. On the coordinator the index is the empty shell table's: bloom_index_filter,
#      bloom_index_changes, bloom_index_info and bloom_index_verify refuse it with 0A000 naming a
#      Citus table, never answer from the shell ("absent" for every registered email); so do they
#      for the index of a reference table and of a Citus local table, and for the shell's index on
#      a worker (Citus syncs its metadata there). bloom_index_contains (text and regclass) and
#      bloom_index_contains_key answer from the shards' indexes there (8 tests them).
#   2. On the workers each shard's own index is an ordinary index: for 1,000 registered emails,
#      the index of the shard that holds the email (get_shard_id_for_distribution_column, placed
#      through citus_shards) answers true, and bloom_index_verify checks each shard's rows.
#   3. bloom_agg(email) over the distributed table, on the coordinator, is byte-identical to
#      bloom_agg over the same emails in a plain table.
#   4. users_email_taken(email), a PL/pgSQL function distributed with create_distributed_function
#      (colocated with users, by its argument): called alone, SELECT users_email_taken('...') on the
#      coordinator is delegated to the worker holding the email's shard (EXPLAIN names that worker)
#      and checks that shard's index there: true for the 1,000 registered emails, called by a role
#      with SELECT on users.email only, false for nearly all of 1,000 never registered. Not
#      delegated (in another query, in a transaction block without force_delegation, inlined as a
#      SQL function) it runs on the coordinator and fails with 42P01; privileges the worker checks.
#   5. A shard moved to the other worker (block_writes) while 4 pgbench writers insert new emails
#      and a reader checks registered ones through the function: no write lost, no false answer;
#      the moved shard's index is on its new node, and every email, old and new, answers true.
#   6. The Node client's CitusIndexFollower (clients/node/test/citus.test.mjs, compiled in a copy
#      of the package), against this cluster: a distributed table of its own followed through a
#      shard move under writers (no row committed before the follower's lag missed), then users,
#      after the move of 5: every email found. Skipped without node or the package's dependencies.
#   7. The Python client's CitusIndexFollower (clients/python/tests/test_citus.py, run by Debian's
#      /usr/bin/python3 -m pytest in a copy of the package), the same against this cluster: every
#      email found, a new one after a refresh, a shard moved under 4 writers with no row committed
#      before the follower's lag missed, max_lag counting the listing's age, a forked child, the
#      listing refused (0A000) for a plain table's index, SharedCitusIndexFollower (two processes
#      sharing one copy per shard index, a takeover, past max_lag, a copy refreshed by a writer
#      with an older listing); then users: every email found. Skipped without pytest, psycopg
#      (3) or xxhash for that Python.
#   8. bloom_index_contains on the coordinator for members, distributed by id, indexed on email
#      (and on a bytea and a bigint column, on lower(email)): every shard is asked (a sample scan
#      by bloom_index_probe, over the transaction's connections), the answer is their union:
#      true for registered keys (quotes, backslashes, %s, $$, non-ASCII among them), false for
#      nearly all others; its own uncommitted insert seen; 55006 after its own TRUNCATE; 42501
#      without SELECT, and from a node whose shard the caller may not read; in a parallel worker;
#      XX000 in a statement Citus pushes down to the shards; a partitioned distributed table
#      (each node asked through Citus's runner, as the caller: 38000 where a node refuses it;
#      0A000 for a runner statement meeting a shell index); a shard moved under 4 writers with
#      readers checking (users and members): no false answer, every insert found.
# Needs Citus installed into the server (test/citus.sh builds the vendored Citus, 13.2.2 for
# PostgreSQL 15 and 14.0.1 for 16 to 18, and installs it); skipped without it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my ($coordinator, @workers) = citus_cluster('128MB');
my %by_port = map { ($_->port => $_) } @workers;

my $rows = 10_000;
my $shards = 8;

# psql on NODE with VERBOSITY=verbose, as USER (the bootstrap superuser unless given): (SQLSTATE
# of the first error or 'none', stdout, stderr).
sub try_sql {
	my ($node, $sql, $user) = @_;
	my ($stdout, $stderr) = ('', '');
	$node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr, on_error_stop => 1,
		extra_params => [ '-v', 'VERBOSITY=verbose', $user ? ('-U', $user) : () ]);
	my ($code) = $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($code // 'none', $stdout, $stderr);
}

# SQL's output on NODE, or "SQLSTATE: error" (a test fails there rather than dies).
sub answer {
	my ($code, $stdout, $stderr) = try_sql(@_);
	return $code eq 'none' ? $stdout : "$code: $stderr";
}

is($coordinator->safe_psql('postgres',
		q{SELECT string_agg(nodeport::text, ' ' ORDER BY nodeport) FROM pg_dist_node WHERE groupid > 0 AND isactive AND hasmetadata}),
	join(' ', sort { $a <=> $b } map { $_->port } @workers), 'Citus: two active workers, their metadata synced');

# The extension is created on the coordinator only: Citus creates it on the workers.
$coordinator->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');
my $version = $coordinator->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'});
for my $w (@workers) {
	is($w->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'}), $version,
		'CREATE EXTENSION bloomfilter on the coordinator creates it on ' . $w->name);
}

$coordinator->safe_psql('postgres', qq{
	CREATE TABLE users (id bigserial, email text NOT NULL);
	SELECT create_distributed_table('users', 'email', shard_count => $shards);
	INSERT INTO users (email) SELECT 'user' || i || '\@mail.com' FROM generate_series(1, $rows) i;
	CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000);
	-- The same emails in a plain table of the coordinator.
	CREATE TABLE users_local (email text NOT NULL);
	INSERT INTO users_local SELECT 'user' || i || '\@mail.com' FROM generate_series(1, $rows) i;
	-- A reference table (a copy on every node) and a Citus local table (one shard, on the coordinator).
	CREATE TABLE domains (name text NOT NULL);
	SELECT create_reference_table('domains');
	INSERT INTO domains VALUES ('mail.com'), ('example.org');
	CREATE INDEX domains_name_bloom ON domains USING bloomfilter (name) WITH (capacity = 1000);
	CREATE TABLE blocked (email text NOT NULL);
	SELECT citus_add_local_table_to_metadata('blocked');
	INSERT INTO blocked VALUES ('user7\@mail.com');
	CREATE INDEX blocked_email_bloom ON blocked USING bloomfilter (email) WITH (capacity = 1000);
});
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM users'), $rows, "users: $rows rows, through the coordinator");
is($coordinator->safe_psql('postgres', q{SELECT pg_relation_size('users') = 0 AND pg_relation_size('users_email_bloom') > 0}),
	't', "the coordinator's users is an empty shell (no heap page), with an index");

# Where Citus placed each shard, and the name of each shard's index.
my %placement = map { split /\|/ } split /\n/, $coordinator->safe_psql('postgres',
	q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'users'::regclass});
is(scalar(keys %placement), $shards, "$shards shards of users");
is(join(' ', sort { $a <=> $b } keys %{ { map { ($_ => 1) } values %placement } }),
	join(' ', sort { $a <=> $b } map { $_->port } @workers), 'the shards are on both workers');
for my $w (@workers) {
	my @here = grep { $placement{$_} == $w->port } sort keys %placement;
	my $names = join(',', map { "'users_email_bloom_$_'" } @here);
	# Citus hides the shards from pg_class on a worker unless asked not to.
	is($w->safe_psql('postgres', qq{SET citus.override_table_visibility = off;
			SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'bloomfilter' AND c.relname IN ($names)}),
		scalar(@here), $w->name . ': each of its ' . scalar(@here) . ' shards has its bloomfilter index, named users_email_bloom_<shard id>');
}

###############################################################################################
note('1. the index functions on the index of a Citus table');
# Each call, and what a call answering from the empty shell would return.
my @calls = (
	[ q{SELECT bloom_info(bloom_index_filter('users_email_bloom'))}, 'bloom_index_filter' ],
	[ q{SELECT count(*) FROM bloom_index_changes('users_email_bloom', '0/0')}, 'bloom_index_changes' ],
	[ q{SELECT * FROM bloom_index_info('users_email_bloom')}, 'bloom_index_info' ],
	[ q{SELECT bloom_index_verify('users_email_bloom')}, 'bloom_index_verify' ],
);
sub refused {
	my ($node, $sql, $what, $table) = @_;
	my ($code, $stdout, $stderr) = try_sql($node, $sql);
	my $where = $node->name;
	is($code, '0A000', "$where: $what on the index of Citus table $table is refused (0A000)")
		or diag("$sql\nanswered " . ($code eq 'none' ? "from the shell: $stdout" : "$code: $stderr"));
	return if $code ne '0A000';
	like($stderr, qr/"\Q$table\E".*Citus table|Citus table.*"\Q$table\E"/, "$where: $what: the error names \"$table\" a Citus table");
	note("$sql\n$stderr") if $sql eq $calls[0][0] && $node == $coordinator;
}
refused($coordinator, @$_, 'users') for @calls;
for my $table ([ 'domains', 'domains_name_bloom', 'mail.com', 'reference' ], [ 'blocked', 'blocked_email_bloom', 'user7@mail.com', 'Citus local' ]) {
	my ($name, $index, $key, $kind) = @$table;
	refused($coordinator, "SELECT bloom_index_verify('$index')", "bloom_index_verify ($kind table)", $name);
	is(answer($coordinator, "SELECT bloom_index_contains('$index', '$key')"), 't',
		"coordinator: bloom_index_contains on the index of the $kind table answers from its shard: true for '$key'");
}
# The checks answer from the shards' indexes, on the coordinator and on a worker (its shell).
for my $call ([ q{bloom_index_contains('users_email_bloom', %s)}, 'bloom_index_contains(text, ...)' ],
		[ q{bloom_index_contains('users_email_bloom'::regclass, %s)}, 'bloom_index_contains(regclass, ...)' ],
		[ q{bloom_index_contains_key('users_email_bloom', %s)}, 'bloom_index_contains_key' ]) {
	my ($expression, $what) = @$call;
	for my $node ($coordinator, $workers[0]) {
		is(answer($node, sprintf("SELECT %s, %s", sprintf($expression, q{'user7@mail.com'}),
				sprintf($expression, q{'never-registered@example.org'}))), 't|f',
			$node->name . ": $what on the shell's index answers from the shards: true for a registered email, false for another");
	}
}
# The coordinator holds a shard of each (it is in the metadata, group 0): their indexes answer.
for my $table ([ 'domains', 'domains_name_bloom', 'mail.com', 'reference' ], [ 'blocked', 'blocked_email_bloom', 'user7@mail.com', 'Citus local' ]) {
	my ($name, $index, $key, $kind) = @$table;
	my $shard = $coordinator->safe_psql('postgres',
		"SELECT shardid FROM citus_shards WHERE table_name = '$name'::regclass AND nodeport = " . $coordinator->port);
	is($coordinator->safe_psql('postgres', "SELECT bloom_index_contains('${index}_$shard', '$key')"), 't',
		"coordinator: the index of its shard of the $kind table, ${index}_$shard, answers true");
}
# Citus syncs its metadata to the workers: they have the shell table and its index too.
refused($workers[0], $calls[0][0], $calls[0][1], 'users');
refused($workers[0], "SELECT bloom_index_verify('domains_name_bloom')", 'bloom_index_verify (reference table)', 'domains');

###############################################################################################
note("2. each shard's own index, on its worker");
# 1,000 of the registered emails (user7 among them), each with the shard that holds it.
my %checks;    # worker port => [ "(email, shard id)", ... ]
for (split /\n/, $coordinator->safe_psql('postgres', q{
		SELECT email, get_shard_id_for_distribution_column('users', email)
		FROM (SELECT 'user' || i || '@mail.com' AS email FROM generate_series(7, 10000, 10) i) e})) {
	my ($email, $shard) = split /\|/;
	push @{ $checks{ $placement{$shard} } }, "('$email', $shard)";
}
is(scalar(map { @$_ } values %checks), 1000, '1,000 registered emails, each placed');
for my $w (@workers) {
	my $values = join(",\n", @{ $checks{ $w->port } || [] });
	ok($values ne '', $w->name . ' holds some of them') or next;
	my $count = scalar @{ $checks{ $w->port } };
	# A shard's table and index are hidden from pg_class listings on a worker, not from their names.
	is($w->safe_psql('postgres', qq{
			SELECT count(*) FILTER (WHERE bloom_index_contains(('users_email_bloom_' || shard)::regclass, email)) || ' of ' || count(*)
			FROM (VALUES $values) v(email, shard)}),
		"$count of $count", $w->name . ": the index of the shard holding each email answers true ($count emails, no false negative)");
	# The same emails in the other shards' indexes of this worker: "absent" nearly always
	# (capacity 100,000, about 1,250 keys per shard).
	my $others = join(',', grep { $placement{$_} == $w->port } sort keys %placement);
	my ($asked, $present) = split /\|/, $w->safe_psql('postgres', qq{
			SELECT count(*), count(*) FILTER (WHERE bloom_index_contains(('users_email_bloom_' || s)::regclass, email))
			FROM (VALUES $values) v(email, shard), unnest(ARRAY[$others]::bigint[]) s WHERE s <> shard});
	cmp_ok($present, '<=', $asked / 100, $w->name . ": other shards' indexes answer absent for them ($present of $asked present)");
	my @here = grep { $placement{$_} == $w->port } sort keys %placement;
	for my $shard (@here) {
		my ($verified, $shard_rows) = split /\|/, $w->safe_psql('postgres',
			"SELECT bloom_index_verify('users_email_bloom_$shard'), (SELECT count(*) FROM users_$shard)");
		is($verified, $shard_rows, $w->name . ": bloom_index_verify of shard ${shard}'s index checks its $shard_rows rows");
	}
}

# bloom_index_shards lists, on the coordinator, each shard's index and where it is: what a reader
# of the index follows. Every registered email is in one of the listed indexes on its node.
my @listed = map { [ split /\|/ ] } split /\n/, $coordinator->safe_psql('postgres',
	q{SELECT shard_id, shard_index, node_name, node_port FROM bloom_index_shards('users_email_bloom')});
is(scalar @listed, scalar keys %placement, 'bloom_index_shards: one row for each shard of users (' . scalar(@listed) . ')');
is(scalar(grep { $placement{ $_->[0] } == $_->[3] && $_->[1] eq "users_email_bloom_$_->[0]" } @listed), scalar @listed,
	"each row names the shard's index and the node Citus placed the shard on");
my %found;
my $emails = join(',', map { "'user${_}\@mail.com'" } grep { $_ % 10 == 7 } 7 .. 10000);
for my $w (@workers) {
	my $indexes = join(',', map { "'$_->[1]'" } grep { $_->[3] == $w->port } @listed);
	next if $indexes eq '';
	$found{$_} = 1 for split /\n/, $w->safe_psql('postgres', qq{
		SELECT e FROM unnest(ARRAY[$emails]) e
		WHERE EXISTS (SELECT 1 FROM unnest(ARRAY[$indexes]) i WHERE bloom_index_contains(i, e))});
}
is(scalar keys %found, 1000, 'the listed indexes, read on their nodes, hold all 1,000 emails');

###############################################################################################
note('3. bloom_agg over the distributed table');
# Citus gathers the shards' rows and aggregates on the coordinator: it pushes a custom aggregate
# down only when its transition type is not a pseudo-type, and bloom_agg's is internal.
note($coordinator->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT bloom_agg(email) FROM users'));
for my $args ('email', 'email, 100000, 0.01') {
	my $distributed = $coordinator->safe_psql('postgres', "SELECT md5(bloom_agg($args)::bytea) FROM users");
	my $local = $coordinator->safe_psql('postgres', "SELECT md5(bloom_agg($args)::bytea) FROM users_local");
	is($distributed, $local, "bloom_agg($args) over the distributed table is byte-identical to the plain table's ($local)");
}

###############################################################################################
note("4. a check from the coordinator: a distributed function, delegated to the shard's worker");
# Citus sends `SELECT f(<constant>)`, alone in its statement, to the node holding the shard of
# the distribution argument (colocate_with), and runs it there; the function finds the shard's
# index by name at each call (a PL/pgSQL body is not resolved when created: before or after the
# index, either works). PL/pgSQL, since the planner never inlines it: Citus delegates only the
# function call it finds after PostgreSQL's planner, and an inlinable SQL function is gone by then
# (it runs on the coordinator, which holds no shard index: 42P01).
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION users_email_taken(email text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
	BEGIN
		RETURN bloom_index_contains('users_email_bloom_' || get_shard_id_for_distribution_column('users', email), email);
	END $$;
	SELECT create_distributed_function('users_email_taken(text)', '$1', colocate_with := 'users');
	-- The same body as SQL functions: STABLE is not inlined (get_shard_id_for_distribution_column
	-- is volatile), VOLATILE is.
	CREATE FUNCTION users_email_taken_sql(email text) RETURNS boolean LANGUAGE sql STABLE AS $$
		SELECT bloom_index_contains('users_email_bloom_' || get_shard_id_for_distribution_column('users', email), email)
	$$;
	CREATE FUNCTION users_email_taken_inlined(email text) RETURNS boolean LANGUAGE sql VOLATILE AS $$
		SELECT bloom_index_contains('users_email_bloom_' || get_shard_id_for_distribution_column('users', email), email)
	$$;
	SELECT create_distributed_function('users_email_taken_sql(text)', '$1', colocate_with := 'users');
	SELECT create_distributed_function('users_email_taken_inlined(text)', '$1', colocate_with := 'users');
});

# checked(EMAILS, USER): each email checked by its own statement SELECT users_email_taken(...) on
# the coordinator, in one session as USER; (answers true, answers false, SQLSTATE or 'none').
sub checked {
	my ($emails, $user) = @_;
	my ($code, $stdout) = try_sql($coordinator, join('', map { "SELECT users_email_taken('$_');\n" } @$emails), $user);
	my @answers = split /\n/, $stdout;
	return (scalar(grep { $_ eq 't' } @answers), scalar(grep { $_ eq 'f' } @answers), $code);
}
# The same 1,000 registered emails as in 2, and 1,000 never registered.
my @registered = map { 'user' . (7 + 10 * $_) . '@mail.com' } 0 .. 999;
my @unregistered = map { "nobody$_\@example.org" } 1 .. 1000;

# A role that is not the owner, with SELECT on the indexed column only (Citus creates the role on
# the workers and grants the column on each shard): what the check needs on the worker, as a
# query of the column would, with EXECUTE on the function (PUBLIC's by default).
$coordinator->safe_psql('postgres', q{
	CREATE ROLE reader LOGIN;
	GRANT SELECT (email) ON users TO reader;
	CREATE ROLE outsider LOGIN;
});
is((sql_error($coordinator, 'postgres', q{SET ROLE outsider; SELECT * FROM bloom_index_shards('users_email_bloom')}))[0],
	'42501', 'bloom_index_shards, as a role without SELECT on users.email: 42501');
is($coordinator->safe_psql('postgres', q{SET ROLE reader; SELECT count(*) FROM bloom_index_shards('users_email_bloom')}),
	scalar @listed, 'bloom_index_shards, as a role with SELECT on users.email only: every shard');
my ($true, $false, $code) = checked(\@registered, 'reader');
is("$true true, $false false, error $code", '1000 true, 0 false, error none',
	'coordinator, as a role with SELECT on users.email only: users_email_taken answers true for the 1,000 registered emails (no false negative)');
($true, $false, $code) = checked(\@unregistered);
is($code, 'none', 'coordinator: users_email_taken answers for 1,000 emails never registered');
cmp_ok($true, '<=', 10, "coordinator: users_email_taken answers false for nearly all of them ($true of 1000 true)");
note("never registered: $true of 1000 answered true (false positives)");

# Delegated: EXPLAIN shows the call sent, as is, to the worker holding the email's shard; for one
# email on each worker.
for my $w (@workers) {
	my ($email, $shard) = $checks{ $w->port }[0] =~ /^\('([^']+)', (\d+)\)$/ or die;
	my $plan = $coordinator->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) SELECT users_email_taken('$email')");
	like($plan, qr/Custom Scan \(Citus Adaptive\).*Task Count: 1.*Query: SELECT public\.users_email_taken\('\Q$email\E'::text\).*Node: host=127\.0\.0\.1 port=${\ $w->port } /s,
		"coordinator: SELECT users_email_taken('$email') is sent to " . $w->name . ", which holds shard $shard")
		or diag($plan);
	note($plan) if $w == $workers[0];
}
# Not delegated, it runs on the coordinator and cannot find the shard's index: in another query
# (Citus delegates only SELECT f(...) alone), in a transaction block (unless force_delegation),
# and as an inlined SQL function. (Not tried here: SELECT f(x) FROM (VALUES ('...')) v(x), or
# FROM (SELECT '...' AS x) s, crashes the coordinator's backend (SIGSEGV) in Citus 13.2.2's
# and 14.0.1's delegation, for any distributed function that is not inlined.)
my $user7_shard = $coordinator->safe_psql('postgres', q{SELECT get_shard_id_for_distribution_column('users', 'user7@mail.com')});
for my $case (
		[ q{SELECT users_email_taken(email) FROM users_local WHERE email = 'user7@mail.com'}, 'in a query of a table' ],
		[ q{BEGIN; SELECT users_email_taken('user7@mail.com'); COMMIT;}, 'in a transaction block' ],
		[ q{SELECT users_email_taken_inlined('user7@mail.com')}, 'as an inlinable (VOLATILE) SQL function' ]) {
	my ($sql, $what) = @$case;
	my ($code, $stdout, $stderr) = try_sql($coordinator, $sql);
	is($code, '42P01', "coordinator: users_email_taken $what is not delegated: 42P01, the shard's index is not there");
	like($stderr, qr/relation "users_email_bloom_$user7_shard" does not exist/, "coordinator: $what: the error names users_email_bloom_$user7_shard");
}
is($coordinator->safe_psql('postgres', q{SELECT users_email_taken_sql('user7@mail.com')}), 't',
	'coordinator: the same body as a STABLE SQL function (not inlinable) is delegated');
# force_delegation: delegated in a transaction block too, there seeing the block's own writes.
$coordinator->safe_psql('postgres',
	q{SELECT create_distributed_function('users_email_taken(text)', '$1', colocate_with := 'users', force_delegation := true)});
is($coordinator->safe_psql('postgres', q{BEGIN;
		SELECT users_email_taken('user7@mail.com');
		INSERT INTO users (email) VALUES ('late@example.org');
		SELECT users_email_taken('late@example.org');
		ROLLBACK;}), "t\nt", 'coordinator, force_delegation: delegated in a transaction block, and sees its uncommitted insert');
# The body's names are resolved on the worker, in the search_path of Citus's connection, not in
# the calling session's.
is($coordinator->safe_psql('postgres', q{SET search_path = pg_catalog; SELECT public.users_email_taken('user7@mail.com')}), 't',
	'coordinator, search_path = pg_catalog: public.users_email_taken answers true');
# Privileges: without SELECT on the column the worker refuses; without EXECUTE, likewise.
($code, my $stdout, my $stderr) = try_sql($coordinator, q{SELECT users_email_taken('user7@mail.com')}, 'outsider');
is($code, '42501', 'coordinator, as a role without SELECT on users: refused (42501)');
like($stderr, qr/permission denied for table users.*while executing command on 127\.0\.0\.1/s, 'the worker refuses it: permission denied for table users');
$coordinator->safe_psql('postgres', q{REVOKE EXECUTE ON FUNCTION users_email_taken(text) FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION users_email_taken(text) TO reader;
	GRANT SELECT ON users TO outsider});
($code, $stdout, $stderr) = try_sql($coordinator, q{SELECT users_email_taken('user7@mail.com')}, 'outsider');
is($code, '42501', 'coordinator, EXECUTE revoked from PUBLIC: a role with SELECT on users but not EXECUTE is refused (42501)');
like($stderr, qr/permission denied for function users_email_taken/, 'permission denied for function users_email_taken');
is($coordinator->safe_psql('postgres', q{SELECT users_email_taken('user7@mail.com')}, extra_params => [ '-U', 'reader' ]), 't',
	'coordinator: the role granted EXECUTE still gets its answer');

###############################################################################################
note('5. a shard moved while 4 writers insert and a reader checks');
# The shard of user7@mail.com, to the other worker. block_writes copies the shard while holding
# its writes (they wait, then go to the new placement); the default mode replicates logically,
# which needs wal_level = logical and a primary key or replica identity (users has neither).
my $moved = $user7_shard;
my ($from) = grep { $_->port == $placement{$moved} } @workers;
my ($to) = grep { $_ != $from } @workers;
my $move = sub {
	my ($mode) = @_;
	return "SELECT citus_move_shard_placement($moved, '127.0.0.1', ${\ $from->port }, '127.0.0.1', ${\ $to->port }, shard_transfer_mode := '$mode')";
};
($code, $stdout, $stderr) = try_sql($coordinator, $move->('auto'));
isnt($code, 'none', "the default transfer mode is refused here ($code)");
note("shard_transfer_mode 'auto': $stderr");

my $dir = PostgreSQL::Test::Utils::tempdir();
my ($writes, $per_writer) = (4, 300);
PostgreSQL::Test::Utils::append_to_file("$dir/insert.sql", q{\set n random(1, 1000000000)
INSERT INTO users (email) VALUES ('new' || :client_id || '.' || :n || '@mail.com');
});
# A registered email checked through the function; a false answer ends the reader with an error.
PostgreSQL::Test::Utils::append_to_file("$dir/check.sql", q{\set n random(1, 10000)
SELECT users_email_taken('user' || :n || '@mail.com') AS taken \gset
\if :taken
\else
SELECT 'false negative for user' || :n || '@mail.com' AS error, 1 / 0;
\endif
});
my $writers = start_pgbench($coordinator, 'postgres', '-c', $writes, '-t', $per_writer, '-R', 400, '-f', "$dir/insert.sql");
# And one through the plain check on the coordinator, which asks every shard (8).
PostgreSQL::Test::Utils::append_to_file("$dir/check_plain.sql", q{\set n random(1, 10000)
SELECT bloom_index_contains('users_email_bloom', 'user' || :n || '@mail.com') AS taken \gset
\if :taken
\else
SELECT 'false negative for user' || :n || '@mail.com' AS error, 1 / 0;
\endif
});
my $reader = start_pgbench($coordinator, 'postgres', '-c', 1, '-t', 600, '-R', 200, '-f', "$dir/check.sql");
my $plain_reader = start_pgbench($coordinator, 'postgres', '-c', 1, '-t', 600, '-R', 200, '-f', "$dir/check_plain.sql");
my $new = q{SELECT count(*) FROM users WHERE email LIKE 'new%'};
$coordinator->poll_query_until('postgres', "SELECT ($new) >= 100") or die 'the writers do not write';
my $before = $coordinator->safe_psql('postgres', $new);
my $started = Time::HiRes::time();
$coordinator->safe_psql('postgres', $move->('block_writes'));
my $seconds = Time::HiRes::time() - $started;
my $after = $coordinator->safe_psql('postgres', $new);
note(sprintf('moved shard %d from %s to %s (block_writes) in %.2f s; new emails: %d before, %d after', $moved, $from->name, $to->name, $seconds, $before, $after));
my $total = $writes * $per_writer;
cmp_ok($after, '<', $total, "the move ended while the writers were writing ($before new emails when it began, $after when it ended, of $total)");
my ($ok, $out, $err) = finish_pgbench($writers);
ok($ok && $out =~ m{actually processed: $total/$total} && $out =~ /number of failed transactions: 0 /,
	"$writes writers: each insert committed ($total)") or diag("$out\n$err");
($ok, $out, $err) = finish_pgbench($reader);
ok($ok && $out =~ m{actually processed: 600/600}, 'a reader during the move: 600 checks of registered emails through users_email_taken, all true, no error')
	or diag("$out\n$err");
($ok, $out, $err) = finish_pgbench($plain_reader);
ok($ok && $out =~ m{actually processed: 600/600}, "a reader during the move: 600 checks of registered emails through the coordinator's bloom_index_contains, all true, no error")
	or diag("$out\n$err");

is($coordinator->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $moved"), $to->port, "shard $moved is on " . $to->name);
is($coordinator->safe_psql('postgres', "SELECT count(*) FROM users WHERE email LIKE 'new%' AND get_shard_id_for_distribution_column('users', email) = $moved") > 0,
	1, "some of the new emails are in shard $moved");
# Citus built the shard's indexes on the new node, same names; the old placement is dropped by
# the cleanup (deferred).
my ($verified, $shard_rows) = split /\|/, $to->safe_psql('postgres',
	"SELECT bloom_index_verify('users_email_bloom_$moved'), (SELECT count(*) FROM users_$moved)");
is($verified, $shard_rows, $to->name . ": the moved shard's index users_email_bloom_$moved is there and checks its $shard_rows rows");
$coordinator->safe_psql('postgres', 'CALL citus_cleanup_orphaned_resources()');
is($from->safe_psql('postgres', "SELECT to_regclass('users_email_bloom_$moved') IS NULL AND to_regclass('users_$moved') IS NULL"), 't',
	$from->name . ': after the cleanup, no copy of the shard or its index is left');
my $plan = $coordinator->safe_psql('postgres', q{EXPLAIN (VERBOSE, COSTS OFF) SELECT users_email_taken('user7@mail.com')});
like($plan, qr/Node: host=127\.0\.0\.1 port=${\ $to->port } /, 'coordinator: the check of user7@mail.com is now sent to ' . $to->name);

($true, $false, $code) = checked(\@registered);
is("$true true, $false false, error $code", '1000 true, 0 false, error none',
	'coordinator, after the move: the 1,000 registered emails answer true (no false negative)');
my @inserted = split /\n/, $coordinator->safe_psql('postgres', "SELECT email FROM users WHERE email LIKE 'new%'");
is(scalar(@inserted), $total, "users holds the $total emails the writers inserted (none lost in the move)");
($true, $false, $code) = checked(\@inserted);
is("$true true, $false false, error $code", scalar(@inserted) . ' true, 0 false, error none',
	'coordinator: each email the writers inserted (' . scalar(@inserted) . ') answers true');

###############################################################################################
note("6. the Node client's CitusIndexFollower");
# run-tap.sh runs the tests from a copy of t/, having left the project's root: OLDPWD names it.
# BLOOM_NODE_CLIENT names another clients/node.
my $package = $ENV{BLOOM_NODE_CLIENT} // ($ENV{OLDPWD} // '') . '/clients/node';
SKIP: {
	my $node_version = '';
	skip 'no node on PATH (apt-get install nodejs npm)', 2
		unless eval { IPC::Run::run([ 'node', '--version' ], '<', \undef, '>', \$node_version, '2>', \my $ignored) };
	chomp $node_version;
	skip "no Node client with its dependencies in '$package' (npm ci there, or set BLOOM_NODE_CLIENT)", 2
		unless -f "$package/package.json" && -d "$package/node_modules/typescript";
	# Compiled in a copy, whose node_modules is the package's: the tests may run as a user that
	# cannot write the tree.
	my $copy = PostgreSQL::Test::Utils::tempdir();
	system('cp', '-R', (map { "$package/$_" } qw(package.json tsconfig.json src scripts test)), $copy) == 0
		or die "cannot copy $package";
	symlink("$package/node_modules", "$copy/node_modules") or die "cannot link $package/node_modules: $!";
	my ($ok, $out, $err) = node_run($coordinator, 'node', "$copy/scripts/build.mjs");
	ok($ok, "the Node client compiles (node $node_version)") or diag("$out\n$err");
	local $ENV{BLOOM_CITUS_COORDINATOR} = sprintf('postgresql://%s@127.0.0.1:%d/postgres', scalar getpwuid($>), $coordinator->port);
	($ok, $out, $err) = node_run($coordinator, 'node', '--test', "$copy/test/citus.test.mjs");
	note(s/^\s*# //r) for grep { /^\s*# (?!Subtest)/ } split /\n/, $out;
	my %count = $out =~ /^# (tests|pass|fail|skipped) (\d+)$/mg;
	my $tests = $count{tests} // 0;
	is($ok && $tests > 0 ? "$tests tests: $count{pass} passed, $count{fail} failed, $count{skipped} skipped" : 'node --test failed',
		"$tests tests: $tests passed, 0 failed, 0 skipped",
		'node --test clients/node/test/citus.test.mjs: CitusIndexFollower finds every row, through a shard move')
		or diag("$out\n$err");
}

###############################################################################################
note("7. the Python client's CitusIndexFollower");
# BLOOM_PYTHON_CLIENT names another clients/python.
my $python_client = $ENV{BLOOM_PYTHON_CLIENT} // ($ENV{OLDPWD} // '') . '/clients/python';
SKIP: {
	my $python = '/usr/bin/python3';
	my @missing = grep { !eval { IPC::Run::run([ $python, '-c', "import $_" ], '<', \undef, '>', \my $o, '2>', \my $e) } }
		qw(pytest psycopg xxhash);
	skip "no @missing for $python (apt-get install python3-pytest python3-psycopg python3-xxhash)", 1 if @missing;
	skip "no Python client in '$python_client' (set BLOOM_PYTHON_CLIENT)", 1
		unless -f "$python_client/bloomfilter/citus.py" && -f "$python_client/tests/test_citus.py";
	# Run in a copy: the tests may run as a user that cannot write the tree (pytest's files,
	# bytecode).
	my $copy = PostgreSQL::Test::Utils::tempdir();
	system('cp', '-R', (map { "$python_client/$_" } qw(pyproject.toml bloomfilter tests)), $copy) == 0
		or die "cannot copy $python_client";
	local $ENV{BLOOM_CITUS_COORDINATOR} = sprintf('postgresql://%s@127.0.0.1:%d/postgres', scalar getpwuid($>), $coordinator->port);
	local $ENV{PYTHONDONTWRITEBYTECODE} = 1;
	my ($ok, $out, $err) = node_run($coordinator, $python, '-m', 'pytest', '-p', 'no:cacheprovider', "--basetemp=$copy/pytest",
		'-q', '-s', '-rs', "$copy/tests/test_citus.py");
	note($_) for $out =~ /citus-test: (.*)$/mg;
	# pytest's last line: "9 passed in 12.34s", "1 failed, 8 passed in ...".
	my ($summary) = (grep { / in [\d.]+s\b/ } split /\n/, $out)[-1] // '';
	my %count = reverse $summary =~ /(\d+) (passed|failed|skipped|errors?)\b/g;
	my $passed = $count{passed} // 0;
	my $skipped = $count{skipped} // 0;
	# Every test runs: those of the file that need no Citus too (the server of the libpq
	# environment, which node_run sets, is the coordinator).
	is($ok && $passed > 0 ? sprintf('%d failed, %d skipped', ($count{failed} // 0) + ($count{error} // 0) + ($count{errors} // 0), $skipped)
			: 'pytest failed', '0 failed, 0 skipped',
		"python3 -m pytest clients/python/tests/test_citus.py: CitusIndexFollower finds every row, through a shard move ($passed passed)")
		or diag("$out\n$err");
}

###############################################################################################
note('8. bloom_index_contains on the coordinator: an index of a column other than the distribution column');
# members is distributed by id: an email may be in any shard. The coordinator's check runs
# SELECT 1 FROM members TABLESAMPLE bloom_index_probe(...) LIMIT 1, which Citus sends to every
# shard as the calling role; a shard returns a row when its index may hold the key.
# Keys that quoting must carry intact: a quote, backslashes, format()'s %s, dollar quotes,
# non-ASCII.
my $members = 10_000;
my @odd = (q{o'brien@mail.com}, q{back\slash\\@mail.com}, q{%s%1$s%%@mail.com}, q{$$x$$@mail.com}, "caf\xc3\xa9\@mail.com");
my $odd_values = join(', ', map { "(\$odd\$$_\$odd\$)" } @odd);
$coordinator->safe_psql('postgres', qq{
	CREATE TABLE members (id bigserial, email text NOT NULL, token bytea NOT NULL, code bigint NOT NULL);
	SELECT create_distributed_table('members', 'id', shard_count => $shards);
	INSERT INTO members (email, token, code)
		SELECT 'member' || i || '\@mail.com', pg_catalog.sha256(i::text::bytea), i * 7 FROM generate_series(1, $members) i;
	INSERT INTO members (email, token, code) SELECT e, pg_catalog.convert_to(e, 'UTF8'), 0 FROM (VALUES $odd_values) v(e);
	CREATE INDEX members_email_bloom ON members USING bloomfilter (email) WITH (capacity = 100000);
	CREATE INDEX members_token_bloom ON members USING bloomfilter (token) WITH (capacity = 100000);
	CREATE INDEX members_code_bloom ON members USING bloomfilter (code) WITH (capacity = 100000);
	GRANT SELECT (email) ON members TO reader;
});
my %member_nodes = map { ($_ => 1) } split /\n/, $coordinator->safe_psql('postgres',
	q{SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = 'members'::regclass});
is(scalar keys %member_nodes, 2, "members' $shards shards are on both workers");

# member_checks(SQL_EXPRESSION_OF_e, VALUES, USER): how many of the values the expression, one
# call each, answers true, false and NULL for, as "T true, F false, N null", run on the coordinator.
sub member_checks {
	my ($expression, $values, $user) = @_;
	my ($code, $stdout, $stderr) = try_sql($coordinator, qq{
		SELECT count(*) FILTER (WHERE r) || ' true, ' || count(*) FILTER (WHERE NOT r) || ' false, '
			|| count(*) FILTER (WHERE r IS NULL) || ' null'
		FROM (SELECT $expression AS r FROM unnest($values) e) c}, $user);
	return $code eq 'none' ? $stdout : "$code: $stderr";
}
my $registered_members = 'ARRAY[' . join(',', map { "'member$_\@mail.com'" } map { 1 + 37 * $_ } 0 .. 199) . ']';
my $unregistered_members = 'ARRAY[' . join(',', map { "'stranger$_\@example.org'" } 1 .. 200) . ']';
is(member_checks(q{bloom_index_contains('members_email_bloom', e)}, $registered_members), '200 true, 0 false, 0 null',
	'coordinator: bloom_index_contains on the email index of members (distributed by id) answers true for 200 registered emails, in all shards');
my ($absent) = member_checks(q{bloom_index_contains('members_email_bloom', e)}, $unregistered_members) =~ /(\d+) false/;
cmp_ok($absent // 0, '>=', 195, "coordinator: and false for nearly all of 200 never registered (${\ ($absent // 'none') } false)");
is(member_checks(q{bloom_index_contains_key('members_email_bloom'::regclass, e)}, $registered_members), '200 true, 0 false, 0 null',
	'coordinator: bloom_index_contains_key (regclass) likewise');
is(member_checks(q{bloom_index_contains('members_email_bloom', e)}, 'ARRAY[' . join(',', map { "\$odd\$$_\$odd\$" } @odd) . ']'),
	scalar(@odd) . ' true, 0 false, 0 null', 'coordinator: emails with a quote, backslashes, %s, $$ and non-ASCII are found');
is(member_checks(q{bloom_index_contains('members_token_bloom', e)}, 'ARRAY(SELECT pg_catalog.sha256(i::text::bytea) FROM generate_series(1, 100) i)'),
	'100 true, 0 false, 0 null', 'coordinator: a bytea index of members: 100 registered tokens found');
is(member_checks(q{bloom_index_contains('members_code_bloom', e)}, 'ARRAY(SELECT i * 7 FROM generate_series(1, 100) i)'),
	'100 true, 0 false, 0 null', 'coordinator: a bigint index of members: 100 registered codes found');
# In a parallel worker (Citus's executor refuses there: "cannot use 2PC"), through the runner.
# force_parallel_mode is debug_parallel_query from 16 on.
my $parallel_setting = $coordinator->safe_psql('postgres',
	q{SELECT CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END});
is(answer($coordinator, qq{SET $parallel_setting = on; } . q{SELECT bloom_index_contains('members_email_bloom', 'member1@mail.com'),
		bloom_index_contains('members_email_bloom', 'never-registered@example.org')}), 't|f',
	"coordinator, $parallel_setting: the check in a parallel worker answers (true, then false)");
# An expression index: each node applies the expression to the value, as on one server.
$coordinator->safe_psql('postgres',
	'CREATE INDEX members_lower_bloom ON members USING bloomfilter (lower(email)) WITH (capacity = 100000)');
is(answer($coordinator, q{SELECT bloom_index_contains('members_lower_bloom', 'MEMBER1@MAIL.COM'),
		bloom_index_contains_key('members_lower_bloom', 'member1@mail.com'), bloom_index_contains_key('members_lower_bloom', 'MEMBER1@MAIL.COM')}),
	't|t|f', 'coordinator: an expression index (lower(email)): the value is lowered on the nodes, a key is not');
# A partitioned distributed table: each shard of the parent is a partitioned table on its node.
$coordinator->safe_psql('postgres', q{
	CREATE TABLE events (id bigint NOT NULL, at date NOT NULL, email text NOT NULL) PARTITION BY RANGE (at);
	CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
	CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
	SELECT create_distributed_table('events', 'id', shard_count => 4);
	INSERT INTO events SELECT i, DATE '2025-06-01' + (i % 400), 'event' || i || '@mail.com' FROM generate_series(1, 2000) i;
	CREATE INDEX events_email_bloom ON events USING bloomfilter (email) WITH (capacity = 10000);
	CREATE INDEX events_id_bloom ON events USING bloomfilter (id) WITH (capacity = 10000);
});
is(member_checks(q{bloom_index_contains('events_email_bloom', e)}, q{ARRAY(SELECT 'event' || i || '@mail.com' FROM generate_series(1, 2000, 40) i)}),
	'50 true, 0 false, 0 null', 'coordinator: a partitioned distributed table, an index of another column: 50 emails of both partitions found');
is(member_checks(q{bloom_index_contains('events_id_bloom', e)}, q{ARRAY(SELECT i::bigint FROM generate_series(1, 2000, 40) i)}),
	'50 true, 0 false, 0 null', 'coordinator: and of its distribution column: 50 ids found');
is(member_checks(q{bloom_index_contains('members_email_bloom', e)}, $registered_members, 'reader'), '200 true, 0 false, 0 null',
	'coordinator, as a role with SELECT on members.email only: the 200 registered emails are found');

# The caller's own uncommitted insert, made through the coordinator, is seen: the index's bits are
# set when the row is inserted, and the nodes' connections read the same pages.
is(answer($coordinator, q{BEGIN;
		INSERT INTO members (email, token, code) VALUES ('late@example.org', '\x00', 0);
		SELECT bloom_index_contains('members_email_bloom', 'late@example.org');
		ROLLBACK;}), 't', 'coordinator: a check sees the email its own transaction inserted, uncommitted');
# A transaction holding the table exclusively would have the check wait for it on the nodes
# (Citus's deadlock detection ends the sample scan's wait after a while; the runner's waits).
($code, $stdout, $stderr) = try_sql($coordinator, q{BEGIN; TRUNCATE members;
		SELECT bloom_index_contains('members_email_bloom', 'member1@mail.com'); ROLLBACK;});
is($code, '55006', 'coordinator: a check in a transaction that truncated the table is refused (55006), at once');
($code, $stdout, $stderr) = try_sql($coordinator, q{BEGIN; TRUNCATE events;
		SELECT bloom_index_contains('events_email_bloom', 'event1@mail.com'); ROLLBACK;});
is($code, '55006', 'coordinator: a check of a partitioned table in a transaction that truncated it is refused (55006), never left waiting');
# Privileges: checked on the coordinator, and as the calling role on the nodes.
($code, $stdout, $stderr) = try_sql($coordinator, q{SELECT bloom_index_contains('members_email_bloom', 'member1@mail.com')}, 'outsider');
is($code, '42501', 'coordinator, as a role without SELECT on members: refused (42501)');
my ($revoked_shard, $revoked_port) = split /\|/, $coordinator->safe_psql('postgres',
	q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'members'::regclass ORDER BY shardid LIMIT 1});
my ($revoked_node) = grep { $_->port == $revoked_port } @workers;
$revoked_node->safe_psql('postgres', "REVOKE SELECT (email) ON members_$revoked_shard FROM reader");
($code, $stdout, $stderr) = try_sql($coordinator, q{SELECT bloom_index_contains('members_email_bloom', 'member1@mail.com')}, 'reader');
is($code, '42501', 'coordinator: a shard whose node does not let the caller read it: the check fails (42501)');
like($stderr, qr/permission denied for table members_$revoked_shard.*while executing command on 127\.0\.0\.1:$revoked_port/s,
	"the node checks as the calling role: permission denied for table members_$revoked_shard");
$revoked_node->safe_psql('postgres', "GRANT SELECT (email) ON members_$revoked_shard TO reader");
is(member_checks(q{bloom_index_contains('users_email_bloom', e)},
		'ARRAY[' . join(',', map { "'$_'" } split /\n/, $coordinator->safe_psql('postgres', q{SELECT email FROM users WHERE email LIKE 'new%'})) . ']'),
	"$total true, 0 false, 0 null", "coordinator: the check of users finds each of the $total emails the writers inserted in 5");

# A statement the way a node receives a shard check from the runner never asks the nodes in turn
# (should a shard index's name resolve to a Citus table's index there, it would ask them again).
($code, $stdout, $stderr) = try_sql($workers[0],
	q{/* bloomfilter shard check */ SELECT bloom_index_contains('events_email_bloom'::regclass, 'event1@mail.com')});
is($code, '0A000', "a shard check (as a node receives it) on a Citus table's index is refused (0A000), never sent on");
# The runner (a partitioned table) connects to each node as the caller too: a shard the node does
# not let it read fails the check there (38000, the node's message).
$coordinator->safe_psql('postgres', 'GRANT SELECT (email) ON events TO reader');
is(answer($coordinator, q{SELECT bloom_index_contains('events_email_bloom', 'event1@mail.com')}, 'reader'), 't',
	'coordinator, as reader: the check of the partitioned table answers');
my ($event_shard, $event_port) = split /\|/, $coordinator->safe_psql('postgres',
	q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'events'::regclass ORDER BY shardid LIMIT 1});
my ($event_node) = grep { $_->port == $event_port } @workers;
$event_node->safe_psql('postgres', "REVOKE SELECT (email) ON events_$event_shard FROM reader");
($code, $stdout, $stderr) = try_sql($coordinator, q{SELECT bloom_index_contains('events_email_bloom', 'event1@mail.com')}, 'reader');
like("$code $stderr", qr/^38000 .*on node 127\.0\.0\.1:$event_port.*permission denied for table events_$event_shard/s,
	"coordinator: the runner's check fails where the node refuses the caller (38000, permission denied for table events_$event_shard)");
$event_node->safe_psql('postgres', "GRANT SELECT (email) ON events_$event_shard TO reader");
# In a statement Citus pushes down to the shards, the check runs on a node, in a shard's query,
# where Citus refuses a query of all shards: an error, never an answer.
($code, $stdout, $stderr) = try_sql($coordinator, q{SELECT count(*) FROM unnest(ARRAY(SELECT email FROM members
		WHERE email LIKE 'member1%')) e WHERE bloom_index_contains('members_email_bloom', e)});
is("$code " . ($stderr =~ /(cannot execute a distributed query from a query on a shard)/)[0] // $stderr,
	'XX000 cannot execute a distributed query from a query on a shard',
	'coordinator: a check inside a statement Citus pushes down to the shards: refused by Citus (XX000)');
# Names: the index's name is resolved on the coordinator; a name that is not one is an error.
($code) = try_sql($coordinator, q{SELECT bloom_index_contains('members_email_bloom''; SELECT 1; --', 'x')});
isnt($code, 'none', "coordinator: an index name with SQL in it resolves to nothing: an error ($code)");

# A shard moved while 4 writers insert and a reader checks registered emails.
my $member_shard = $coordinator->safe_psql('postgres',
	q{SELECT shardid FROM citus_shards WHERE table_name = 'members'::regclass ORDER BY shardid LIMIT 1 OFFSET 1});
my $member_port = $coordinator->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $member_shard");
my ($member_from) = grep { $_->port == $member_port } @workers;
my ($member_to) = grep { $_ != $member_from } @workers;
PostgreSQL::Test::Utils::append_to_file("$dir/member_insert.sql", q{\set n random(1, 1000000000)
INSERT INTO members (email, token, code) VALUES ('joined' || :client_id || '.' || :n || '@mail.com', '\x00', 0);
});
PostgreSQL::Test::Utils::append_to_file("$dir/member_check.sql", q{\set n random(1, 10000)
SELECT bloom_index_contains('members_email_bloom', 'member' || :n || '@mail.com') AS taken \gset
\if :taken
\else
SELECT 'false negative for member' || :n || '@mail.com' AS error, 1 / 0;
\endif
});
$writers = start_pgbench($coordinator, 'postgres', '-c', $writes, '-t', $per_writer, '-R', 400, '-f', "$dir/member_insert.sql");
$reader = start_pgbench($coordinator, 'postgres', '-c', 1, '-t', 600, '-R', 200, '-f', "$dir/member_check.sql");
my $joined = q{SELECT count(*) FROM members WHERE email LIKE 'joined%'};
$coordinator->poll_query_until('postgres', "SELECT ($joined) >= 100") or die 'the writers do not write';
$before = $coordinator->safe_psql('postgres', $joined);
$coordinator->safe_psql('postgres', "SELECT citus_move_shard_placement($member_shard, '127.0.0.1', ${\ $member_from->port }, "
	. "'127.0.0.1', ${\ $member_to->port }, shard_transfer_mode := 'block_writes')");
$after = $coordinator->safe_psql('postgres', $joined);
note("moved shard $member_shard of members from ${\ $member_from->name } to ${\ $member_to->name }; joined emails: $before before, $after after");
cmp_ok($after, '<', $total, "the move of members' shard ended while the writers were writing ($before, then $after, of $total)");
($ok, $out, $err) = finish_pgbench($writers);
ok($ok && $out =~ m{actually processed: $total/$total} && $out =~ /number of failed transactions: 0 /,
	"$writes writers into members: each insert committed ($total)") or diag("$out\n$err");
($ok, $out, $err) = finish_pgbench($reader);
ok($ok && $out =~ m{actually processed: 600/600}, 'a reader during the move: 600 checks of registered emails on the coordinator, all true, no error')
	or diag("$out\n$err");
is($coordinator->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $member_shard"), $member_to->port,
	"members' shard $member_shard is on " . $member_to->name);
$coordinator->safe_psql('postgres', 'CALL citus_cleanup_orphaned_resources()');
# The emails fetched first: a statement reading members that Citus pushes down to the shards runs
# the check there, where Citus refuses its query of all shards (below).
my $joined_emails = 'ARRAY[' . join(',', map { "'$_'" } split /\n/,
	$coordinator->safe_psql('postgres', q{SELECT email FROM members WHERE email LIKE 'joined%'})) . ']';
is(member_checks(q{bloom_index_contains('members_email_bloom', e)}, $joined_emails), "$total true, 0 false, 0 null",
	"coordinator, after the move and the cleanup: each of the $total emails the writers inserted is found");
is(member_checks(q{bloom_index_contains('members_email_bloom', e)}, $registered_members), '200 true, 0 false, 0 null',
	'coordinator, after the move: the 200 registered emails are found');

$_->stop for $coordinator, @workers;
done_testing();
