# A Citus check answers from the shards' index bits, whatever the caller's snapshot and whatever
# the kind of Citus table: a coordinator and two workers.
#   1. Under READ COMMITTED, REPEATABLE READ and SERIALIZABLE: a transaction takes its snapshot
#      (a count of a new table distributed by id in 8 shards, 2 rows to the snapshot, so most
#      shards have none it sees), another session commits 1,000 emails, and the transaction's checks of
#      them on the coordinator (bloom_index_contains by name and by regclass,
#      bloom_index_contains_key) all answer true, while its count still sees 2 rows; its own
#      uncommitted insert answers true too. Each with citus.enable_local_execution on and off.
#   2. Every kind of Citus table answers, under each isolation level, with local execution on and
#      off: distributed with shard_count 1, distributed with no distribution column (null), a table
#      of a distributed schema (citus.enable_schema_based_sharding), a reference table, a Citus
#      local table, and a partitioned distributed table. Each has a key committed after the
#      snapshot (true) and a key never inserted (false).
#   3. bloom_index_probe, whose scan returns a shard's first tuple whatever its visibility, gives
#      no column of it: a query on a worker that reads one (a target, a filter, ctid) is refused
#      (0A000, a count(*) too: its plan reads them all), and a shard whose rows are all deleted
#      gives one row for a key its index holds, none for another.
# Needs Citus installed into the server (test/citus.sh); skipped without it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my ($coordinator, @workers) = citus_cluster('64MB');
$coordinator->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

my $citus_major = $coordinator->safe_psql('postgres', q{SELECT split_part(extversion, '.', 1)::int FROM pg_extension WHERE extname = 'citus'});

# The tables: each kind, an index on email with no options (a growing index), 2 rows before the
# snapshot in accounts.
$coordinator->safe_psql('postgres', q{
	CREATE TABLE accounts (id bigint NOT NULL, email text NOT NULL);
	SELECT create_distributed_table('accounts', 'id', shard_count => 8);
	INSERT INTO accounts VALUES (1, 'before1@mail.com'), (2, 'before2@mail.com');
	CREATE INDEX accounts_email_bloom ON accounts USING bloomfilter (email);

	CREATE TABLE solo (id bigint NOT NULL, email text NOT NULL);
	SELECT create_distributed_table('solo', 'id', shard_count => 1);
	CREATE INDEX solo_email_bloom ON solo USING bloomfilter (email);

	CREATE TABLE nulldist (id bigint NOT NULL, email text NOT NULL);
	SELECT create_distributed_table('nulldist', null);
	CREATE INDEX nulldist_email_bloom ON nulldist USING bloomfilter (email);

	SET citus.enable_schema_based_sharding = on;
	CREATE SCHEMA tenant1;
	RESET citus.enable_schema_based_sharding;
	CREATE TABLE tenant1.people (id bigint NOT NULL, email text NOT NULL);
	CREATE INDEX people_email_bloom ON tenant1.people USING bloomfilter (email);

	CREATE TABLE domains (id bigint NOT NULL, email text NOT NULL);
	SELECT create_reference_table('domains');
	CREATE INDEX domains_email_bloom ON domains USING bloomfilter (email);

	CREATE TABLE blocked (id bigint NOT NULL, email text NOT NULL);
	SELECT citus_add_local_table_to_metadata('blocked');
	CREATE INDEX blocked_email_bloom ON blocked USING bloomfilter (email);

	CREATE TABLE events (id bigint NOT NULL, email text NOT NULL, day date NOT NULL) PARTITION BY RANGE (day);
	CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
	CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
	SELECT create_distributed_table('events', 'id', shard_count => 4);
	CREATE INDEX events_email_bloom ON events USING bloomfilter (email);
});
is($coordinator->safe_psql('postgres', q{SELECT string_agg(logicalrelid::text || ':' || partmethod::text, ' ' ORDER BY logicalrelid::text)
		FROM pg_dist_partition WHERE logicalrelid::text IN ('solo', 'nulldist', 'tenant1.people', 'domains', 'blocked', 'accounts')}),
	'accounts:h blocked:n domains:n nulldist:n solo:h tenant1.people:n', 'each kind of Citus table is in the metadata');

my @levels = ('READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE');

my $round = 0;

# 1. A new table for each round, 8 shards, 2 rows to the snapshot (most shards have none it
# sees): 1,000 emails committed by another session after the snapshot.
for my $level (@levels) {
	for my $local (qw(on off)) {
		$round++;
		my $table = "accounts$round";
		$coordinator->safe_psql('postgres', qq{
			CREATE TABLE $table (id bigint NOT NULL, email text NOT NULL);
			SELECT create_distributed_table('$table', 'id', shard_count => 8);
			INSERT INTO $table VALUES (1, 'before1\@mail.com'), (2, 'before2\@mail.com');
			CREATE INDEX ${table}_email_bloom ON $table USING bloomfilter (email);
		});
		my $session = $coordinator->background_psql('postgres', on_error_stop => 0);
		$session->query_safe("SET citus.enable_local_execution = $local");
		$session->query_safe("BEGIN ISOLATION LEVEL $level");
		my $seen = $session->query_safe("SELECT count(*) FROM $table");
		$coordinator->safe_psql('postgres', "INSERT INTO $table SELECT i, 'r$round-' || i || '\@mail.com'
			FROM generate_series(1000, 1999) i");
		my $answers = ask($session, qq{
			SELECT count(*) FILTER (WHERE bloom_index_contains('${table}_email_bloom', e)) || ' ' ||
			       count(*) FILTER (WHERE bloom_index_contains('${table}_email_bloom'::regclass, e)) || ' ' ||
			       count(*) FILTER (WHERE bloom_index_contains_key('${table}_email_bloom', e))
			FROM (SELECT 'r$round-' || i || '\@mail.com' AS e FROM generate_series(1000, 1999) i) k});
		my $still = $session->query_safe("SELECT count(*) FROM $table");
		is($answers, '1000 1000 1000',
			"$level, local execution $local: 1,000 emails committed after the snapshot all answer true (by name, regclass, key)");
		if ($level eq 'READ COMMITTED') {
			is("$seen $still", '2 1002', "$level: the transaction's count sees the new rows");
		} else {
			is("$seen $still", '2 2', "$level: the transaction's count still sees 2 rows (its snapshot)");
		}
		$session->query_safe(qq{INSERT INTO $table VALUES (-1, 'own\@mail.com')});
		is(ask($session, qq{SELECT bloom_index_contains('${table}_email_bloom', 'own\@mail.com')}), 't',
			"$level, local execution $local: the transaction's own uncommitted insert answers true");
		$session->query('ROLLBACK');
		$session->quit;
	}
}

# 2. Each kind of table: a key committed after the snapshot, a key never inserted.
my %insert = (
	solo => q{INSERT INTO solo VALUES (%d, '%s')},
	nulldist => q{INSERT INTO nulldist VALUES (%d, '%s')},
	'tenant1.people' => q{INSERT INTO tenant1.people VALUES (%d, '%s')},
	domains => q{INSERT INTO domains VALUES (%d, '%s')},
	blocked => q{INSERT INTO blocked VALUES (%d, '%s')},
	events => q{INSERT INTO events VALUES (%d, '%s', '2027-03-01')},
);
my %index = (solo => 'solo_email_bloom', nulldist => 'nulldist_email_bloom', 'tenant1.people' => 'tenant1.people_email_bloom',
	domains => 'domains_email_bloom', blocked => 'blocked_email_bloom', events => 'events_email_bloom');
for my $table (sort keys %insert) {
	for my $level (@levels) {
		for my $local (qw(on off)) {
			$round++;
			my $key = "k$round\@$table.example";
			my $session = $coordinator->background_psql('postgres', on_error_stop => 0);
			$session->query_safe("SET citus.enable_local_execution = $local");
			$session->query_safe("BEGIN ISOLATION LEVEL $level");
			$session->query_safe("SELECT count(*) FROM $table");
			$coordinator->safe_psql('postgres', sprintf($insert{$table}, $round, $key));
			my $answer = ask($session, qq{SELECT bloom_index_contains('$index{$table}', '$key') || ' ' ||
				bloom_index_contains('$index{$table}', 'never$round\@nowhere.example')});
			is($answer, 'true false', "$table, $level, local execution $local: a key committed after the snapshot answers true, a key never inserted false");
			$session->query('ROLLBACK');
			$session->quit;
		}
	}
}

# 3. On a worker, the probe's scan of a shard gives no column of the tuple it returns.
my ($worker, $shard) = (undef, undef);
for my $w (@workers) {
	$shard = $w->safe_psql('postgres', q{SET citus.override_table_visibility = off; SELECT c.relname FROM pg_class c WHERE c.relname ~ '^accounts_[0-9]+$'
		AND c.relkind = 'r' AND pg_relation_size(c.oid) > 0 ORDER BY 1 LIMIT 1});
	if ($shard) { $worker = $w; last; }
}
ok($worker, "a worker holds a non-empty shard of accounts ($shard)");
my $key = $worker->safe_psql('postgres', "SELECT email FROM $shard LIMIT 1");
my $probe = "bloom_index_probe('public.accounts_email_bloom', '$key', '25')";
my ($stdout, $stderr);
for my $query ("SELECT * FROM $shard TABLESAMPLE $probe", "SELECT ctid FROM $shard TABLESAMPLE $probe",
	"SELECT 1 FROM $shard TABLESAMPLE $probe WHERE email = '$key'", "SELECT $shard FROM $shard TABLESAMPLE $probe",
	"SELECT count(*) FROM $shard TABLESAMPLE $probe") {
	$worker->psql('postgres', $query, stdout => \$stdout, stderr => \$stderr, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, qr/0A000: bloom_index_probe returns rows without their columns/, "worker: refused: $query");
}
my $rows_through_probe = "SELECT count(*) FROM (SELECT 1 FROM $shard TABLESAMPLE $probe OFFSET 0) s";
$worker->safe_psql('postgres', "SET citus.override_table_visibility = off; DELETE FROM $shard");
is($worker->safe_psql('postgres', "SELECT count(*) FROM $shard") . ' ' . $worker->safe_psql('postgres', $rows_through_probe), '0 1',
	'worker: the probe of a shard whose rows are all deleted (not vacuumed) returns one row, no more: its key\'s bits answer');
is($worker->safe_psql('postgres', "SELECT count(*) FROM (SELECT 1 FROM $shard TABLESAMPLE bloom_index_probe('public.accounts_email_bloom', 'never\@nowhere.example', '25') OFFSET 0) s"),
	'0', 'worker: none for a key its index does not hold');

done_testing();
