# The index functions on Citus (distributed PostgreSQL): a coordinator and two workers, users
# distributed by email in 8 shards, 10,000 emails, CREATE INDEX users_email_bloom ... USING
# bloomfilter on the coordinator (Citus creates it on every shard, as users_email_bloom_<shard id>).
#   1. On the coordinator the index is the empty shell table's: bloom_index_contains (text and
#      regclass), bloom_index_contains_key, bloom_index_filter, bloom_index_changes,
#      bloom_index_info and bloom_index_verify refuse it with 0A000 naming a Citus table, never
#      answer from the shell ("absent" for every registered email); so do they for the index of a
#      reference table and of a Citus local table, and for the shell's index on a worker (Citus
#      syncs its metadata there).
#   2. On the workers each shard's own index is an ordinary index: for 1,000 registered emails,
#      the index of the shard that holds the email (get_shard_id_for_distribution_column, placed
#      through citus_shards) answers true, and bloom_index_verify checks each shard's rows.
#   3. bloom_agg(email) over the distributed table, on the coordinator, is byte-identical to
#      bloom_agg over the same emails in a plain table.
# Needs Citus installed into the server (test/citus.sh builds the vendored Citus 13.2.2 and
# installs it); skipped without it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => "Citus is not installed ($sharedir/extension/citus.control): test/citus.sh installs it"
	unless -f "$sharedir/extension/citus.control";

my $rows = 10_000;
my $shards = 8;

# Citus reaches the nodes, the coordinator included, over TCP on loopback (the test's nodes listen
# on a Unix socket only by default; initdb -A trust trusts 127.0.0.1 too), without TLS: Citus's
# default node_conninfo, sslmode=require, would have CREATE EXTENSION citus turn ssl on with a
# self-signed certificate in each data directory. Multi-shard writes use two-phase commit.
my @settings = (q{shared_preload_libraries = 'citus'}, 'max_prepared_transactions = 100',
	q{listen_addresses = '127.0.0.1'}, q{citus.node_conninfo = 'sslmode=disable'}, 'shared_buffers = 128MB');
my $coordinator = new_node('coordinator', \@settings);
my %worker = map { ($_ => new_node($_, \@settings)) } qw(worker1 worker2);
my @workers = map { $worker{$_} } sort keys %worker;
my %by_port = map { ($_->port => $_) } @workers;

# psql on NODE with VERBOSITY=verbose: (SQLSTATE of the first error or 'none', stdout, stderr).
sub try_sql {
	my ($node, $sql) = @_;
	my ($stdout, $stderr) = ('', '');
	$node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr, on_error_stop => 1,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my ($code) = $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($code // 'none', $stdout, $stderr);
}

$_->safe_psql('postgres', 'CREATE EXTENSION citus') for $coordinator, @workers;
$coordinator->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', " . $coordinator->port . ')');
$coordinator->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') for @workers;
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
	[ q{SELECT bloom_index_contains('users_email_bloom', 'user7@mail.com')}, 'bloom_index_contains(text, ...)' ],
	[ q{SELECT bloom_index_contains('users_email_bloom'::regclass, 'user7@mail.com')}, 'bloom_index_contains(regclass, ...)' ],
	[ q{SELECT bloom_index_contains_key('users_email_bloom', 'user7@mail.com')}, 'bloom_index_contains_key' ],
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
	refused($coordinator, "SELECT bloom_index_contains('$index', '$key')", "bloom_index_contains ($kind table)", $name);
	refused($coordinator, "SELECT bloom_index_verify('$index')", "bloom_index_verify ($kind table)", $name);
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
refused($workers[0], "SELECT bloom_index_contains('domains_name_bloom', 'mail.com')", 'bloom_index_contains (reference table)', 'domains');

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

$_->stop for $coordinator, @workers;
done_testing();
