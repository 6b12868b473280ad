# A multicolumn bloomfilter index of a Citus table answers on the coordinator from its shards'
# index bits, whatever the caller's snapshot and whatever the kind of Citus table: a coordinator and
# two workers. The composite key's hash is worked out on the coordinator (an expression applied
# there, as on one server) and each shard's index is asked for its bits.
#   1. Under READ COMMITTED, REPEATABLE READ and SERIALIZABLE, with citus.enable_local_execution on
#      and off: a transaction takes its snapshot (a count of a new table UNIQUE (tenant_id, email)
#      distributed by tenant_id in 8 shards, 2 rows to the snapshot, so most shards have none it
#      sees), another session commits 1,000 (tenant_id, email) pairs, and the transaction's checks
#      of them (bloom_index_contains by name and by regclass, bloom_index_contains_key) all answer
#      true while its count still sees 2 rows; the same emails in other tenants mostly answer
#      false; ('t1', 'x') committed and ('t2', 'x') never: false; its own uncommitted insert: true.
#   2. Every kind of Citus table answers under each isolation level, with local execution on and
#      off: distributed with shard_count 1, with no distribution column (null), a table of a
#      distributed schema, a reference table, a Citus local table, and a partitioned distributed
#      table (asked through Citus's runner), each with a pair committed after the snapshot (true),
#      a pair never inserted (false) and its own uncommitted insert (true); the check in a
#      parallel worker (the runner) too.
#   3. Values of other types and expression columns: (org_id int, lower(username)) by value (an
#      untyped literal, a bigint, out of the column's range) and by key; (bigint, bytea, uuid);
#      quotes, backslashes, `%s`, `$$` and non-ASCII in values; an expression giving NULL: NULL.
#   4. Errors: the wrong number or type of values (42804), a caller without SELECT on the table
#      or on one key column, an expression of the owner's code for another role (42501, its keys
#      checked instead); on a worker, bloom_index_probe refuses a malformed hash or
#      kind (22023), a count of key columns other than the index's and a form for another count
#      (42804), a role without SELECT on both key columns of the shard (42501), and answers a
#      well-formed one from the shard index's bits.
# Needs Citus installed into the server (test/citus.sh); skipped without it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my ($coordinator, @workers) = citus_cluster('64MB');
$coordinator->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

# Each kind of Citus table, UNIQUE (tenant_id, email) where Citus allows it (a unique constraint of
# a distributed table includes its distribution column), and a composite index on the pair.
$coordinator->safe_psql('postgres', q{
	CREATE TABLE solo (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
	SELECT create_distributed_table('solo', 'tenant_id', shard_count => 1);
	CREATE INDEX solo_bloom ON solo USING bloomfilter (tenant_id, email);

	CREATE TABLE nulldist (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
	SELECT create_distributed_table('nulldist', null);
	CREATE INDEX nulldist_bloom ON nulldist USING bloomfilter (tenant_id, email);

	SET citus.enable_schema_based_sharding = on;
	CREATE SCHEMA tenant1;
	RESET citus.enable_schema_based_sharding;
	CREATE TABLE tenant1.people (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
	CREATE INDEX people_bloom ON tenant1.people USING bloomfilter (tenant_id, email);

	CREATE TABLE domains (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
	SELECT create_reference_table('domains');
	CREATE INDEX domains_bloom ON domains USING bloomfilter (tenant_id, email);

	CREATE TABLE blocked (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
	SELECT citus_add_local_table_to_metadata('blocked');
	CREATE INDEX blocked_bloom ON blocked USING bloomfilter (tenant_id, email);

	CREATE TABLE events (tenant_id text NOT NULL, email text NOT NULL, day date NOT NULL) PARTITION BY RANGE (day);
	CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
	CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
	SELECT create_distributed_table('events', 'tenant_id', shard_count => 4);
	CREATE INDEX events_bloom ON events USING bloomfilter (tenant_id, email);
});
is($coordinator->safe_psql('postgres', q{SELECT string_agg(logicalrelid::text || ':' || partmethod::text, ' ' ORDER BY logicalrelid::text)
		FROM pg_dist_partition WHERE logicalrelid::text IN ('solo', 'nulldist', 'tenant1.people', 'domains', 'blocked', 'events')}),
	'blocked:n domains:n events:h nulldist:n solo:h tenant1.people:n', 'each kind of Citus table is in the metadata');

my @levels = ('READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE');


# The SQLSTATE of SQL's error on NODE as ROLE ('none' without one).
sub sqlstate {
	my ($node, $sql, $role) = @_;
	my $set_role = defined $role ? "SET ROLE $role; " : '';
	my ($code) = sql_error($node, 'postgres', $set_role . $sql);
	return $code;
}
my $round = 0;

# 1. A new table for each round, 8 shards, 2 rows to the snapshot (most shards have none it
# sees): 1,000 pairs in 20 tenants committed by another session after the snapshot.
for my $level (@levels) {
	for my $local (qw(on off)) {
		$round++;
		my $table = "signups$round";
		$coordinator->safe_psql('postgres', qq{
			CREATE TABLE $table (tenant_id text NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email));
			SELECT create_distributed_table('$table', 'tenant_id', shard_count => 8);
			INSERT INTO $table VALUES ('t1', 'before1\@mail.com'), ('t2', 'before2\@mail.com');
			CREATE INDEX ${table}_bloom ON $table USING bloomfilter (tenant_id, email);
		});
		my $session = $coordinator->background_psql('postgres', on_error_stop => 0);
		$session->query_safe("SET citus.enable_local_execution = $local");
		$session->query_safe("BEGIN ISOLATION LEVEL $level");
		my $seen = $session->query_safe("SELECT count(*) FROM $table");
		$coordinator->safe_psql('postgres', qq{INSERT INTO $table SELECT 't' || (i % 20), 'r$round-' || i || '\@mail.com'
			FROM generate_series(1000, 1999) i;
			INSERT INTO $table VALUES ('t1', 'x$round\@mail.com')});
		my $pairs = "SELECT 't' || (i % 20) AS t, 'r$round-' || i || '\@mail.com' AS e FROM generate_series(1000, 1999) i";
		my $answers = ask($session, qq{
			SELECT count(*) FILTER (WHERE bloom_index_contains('${table}_bloom', t, e)) || ' ' ||
			       count(*) FILTER (WHERE bloom_index_contains('${table}_bloom'::regclass, t, e)) || ' ' ||
			       count(*) FILTER (WHERE bloom_index_contains_key('${table}_bloom', t, e)) || ' ' ||
			       count(*) FILTER (WHERE bloom_index_contains_key('${table}_bloom'::regclass, t, e))
			FROM ($pairs) k});
		is($answers, '1000 1000 1000 1000',
			"$level, local execution $local: 1,000 pairs committed after the snapshot all answer true (by name, regclass, key by name and regclass)");
		# The same emails in the next tenant: never inserted.
		my $absent = ask($session, qq{SELECT count(*) FILTER (WHERE bloom_index_contains('${table}_bloom', 't' || ((i + 1) % 20), 'r$round-' || i || '\@mail.com'))
			FROM generate_series(1000, 1999) i});
		ok($absent =~ /^\d+$/ && $absent < 50, "$level, local execution $local: the same emails in other tenants mostly answer false ($absent of 1,000 true)");
		is(ask($session, qq{SELECT bloom_index_contains('${table}_bloom', 't1', 'x$round\@mail.com') || ' ' ||
				bloom_index_contains('${table}_bloom', 't2', 'x$round\@mail.com')}), 'true false',
			"$level, local execution $local: ('t1', 'x') committed after the snapshot answers true, ('t2', 'x') false");
		my $still = $session->query_safe("SELECT count(*) FROM $table");
		if ($level eq 'READ COMMITTED') {
			is("$seen $still", '2 1003', "$level: the transaction's count sees the new rows");
		} else {
			is("$seen $still", '2 2', "$level: the transaction's count still sees 2 rows (its snapshot)");
		}
		$session->query_safe(qq{INSERT INTO $table VALUES ('t-own', 'own\@mail.com')});
		is(ask($session, qq{SELECT bloom_index_contains('${table}_bloom', 't-own', 'own\@mail.com') || ' ' ||
				bloom_index_contains_key('${table}_bloom'::regclass, 't-own', 'own\@mail.com')}), 'true true',
			"$level, local execution $local: the transaction's own uncommitted insert answers true");
		$session->query('ROLLBACK');
		$session->quit;
	}
}

# 2. Each kind of table: a pair committed after the snapshot, the same email in another tenant.
my %insert = (
	solo => q{INSERT INTO solo VALUES ('%s', '%s')},
	nulldist => q{INSERT INTO nulldist VALUES ('%s', '%s')},
	'tenant1.people' => q{INSERT INTO tenant1.people VALUES ('%s', '%s')},
	domains => q{INSERT INTO domains VALUES ('%s', '%s')},
	blocked => q{INSERT INTO blocked VALUES ('%s', '%s')},
	events => q{INSERT INTO events VALUES ('%s', '%s', '2027-03-01')},
);
my %index = (solo => 'solo_bloom', nulldist => 'nulldist_bloom', 'tenant1.people' => 'tenant1.people_bloom',
	domains => 'domains_bloom', blocked => 'blocked_bloom', events => 'events_bloom');
for my $table (sort keys %insert) {
	for my $level (@levels) {
		for my $local (qw(on off)) {
			$round++;
			my ($tenant, $key) = ("t$round", "k$round\@$table.example");
			my $session = $coordinator->background_psql('postgres', on_error_stop => 0);
			$session->query_safe("SET citus.enable_local_execution = $local");
			$session->query_safe("BEGIN ISOLATION LEVEL $level");
			$session->query_safe("SELECT count(*) FROM $table");
			$coordinator->safe_psql('postgres', sprintf($insert{$table}, $tenant, $key));
			my $answer = ask($session, qq{SELECT bloom_index_contains('$index{$table}', '$tenant', '$key') || ' ' ||
				bloom_index_contains_key('$index{$table}'::regclass, '$tenant', '$key') || ' ' ||
				bloom_index_contains('$index{$table}', 'other$round', '$key')});
			is($answer, 'true true false',
				"$table, $level, local execution $local: a pair committed after the snapshot answers true (value, key), another tenant's false");
			$session->query_safe(sprintf($insert{$table}, "own$round", $key));
			is(ask($session, qq{SELECT bloom_index_contains('$index{$table}', 'own$round', '$key')}), 't',
				"$table, $level, local execution $local: the transaction's own uncommitted insert answers true");
			$session->query('ROLLBACK');
			$session->quit;
		}
	}
}

# In a parallel worker (Citus's executor refuses there), through the runner: a distributed table
# and a partitioned one. force_parallel_mode is debug_parallel_query from 16 on.
my $parallel_setting = $coordinator->safe_psql('postgres',
	q{SELECT CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END});
$coordinator->safe_psql('postgres', q{INSERT INTO events VALUES ('tp', 'parallel@events.example', '2026-05-01')});
is($coordinator->safe_psql('postgres', qq{SET $parallel_setting = on;
	SELECT bloom_index_contains('signups1_bloom', 't1', 'x1\@mail.com') || ' ' || bloom_index_contains('signups1_bloom', 't2', 'x1\@mail.com')
	|| ' ' || bloom_index_contains_key('events_bloom', 'tp', 'parallel\@events.example') || ' ' || bloom_index_contains('events_bloom', 'other', 'parallel\@events.example')}),
	'true false true false', "$parallel_setting: checks in a parallel worker answer through the runner");

# 3. Other types, an expression column, a third column; hard characters in values.
$coordinator->safe_psql('postgres', q{
	CREATE TABLE members (org_id int NOT NULL, username text NOT NULL);
	SELECT create_distributed_table('members', 'org_id', shard_count => 4);
	CREATE INDEX members_bloom ON members USING bloomfilter (org_id, lower(username));
	INSERT INTO members VALUES (7, 'Alice'), (8, 'Bob');

	CREATE TABLE devices (org_id bigint NOT NULL, serial bytea NOT NULL, id uuid NOT NULL);
	SELECT create_distributed_table('devices', 'org_id', shard_count => 4);
	CREATE INDEX devices_bloom ON devices USING bloomfilter (org_id, serial, id);
	INSERT INTO devices VALUES (1, '\xdeadbeef', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');

	CREATE TABLE hard (tenant_id text NOT NULL, email text NOT NULL);
	SELECT create_distributed_table('hard', 'tenant_id', shard_count => 4);
	CREATE INDEX hard_bloom ON hard USING bloomfilter (tenant_id, email);
	INSERT INTO hard VALUES ($$O'Brien\%s$$, $$a$$ || '$$' || $$b'c\\d@é.example$$);

	CREATE TABLE nicknames (org_id int NOT NULL, nick text NOT NULL);
	SELECT create_distributed_table('nicknames', 'org_id', shard_count => 4);
	CREATE INDEX nicknames_bloom ON nicknames USING bloomfilter (org_id, nullif(nick, ''));
	INSERT INTO nicknames VALUES (1, 'ace'), (1, '');

	CREATE INDEX signups1_email_bloom ON signups1 USING bloomfilter (email);
});
is($coordinator->safe_psql('postgres', q{SELECT
	coalesce(bloom_index_contains('nicknames_bloom', 1, '')::text, 'null') || ' ' ||
	bloom_index_contains('nicknames_bloom', 1, 'ace') || ' ' || bloom_index_contains('nicknames_bloom', 2, 'ace')}),
	'null true false', 'an expression giving NULL answers NULL (such a row is not indexed), and asks no shard');
is($coordinator->safe_psql('postgres', q{SELECT
	bloom_index_contains('members_bloom', 7, 'ALICE') || ' ' ||
	bloom_index_contains('members_bloom', 7::bigint, 'alice') || ' ' ||
	bloom_index_contains('members_bloom', '7', 'Alice') || ' ' ||
	bloom_index_contains('members_bloom'::regclass, 7::smallint, 'bob') || ' ' ||
	bloom_index_contains('members_bloom', 8, 'alice') || ' ' ||
	bloom_index_contains('members_bloom', 5000000000, 'alice') || ' ' ||
	bloom_index_contains_key('members_bloom', 7, 'alice') || ' ' ||
	bloom_index_contains_key('members_bloom', 7, 'Alice')}),
	'true true true false false false true false',
	'an expression column: a value through the expression (any integer type, an untyped literal), the key as given; out of range: false');
is($coordinator->safe_psql('postgres', q{SELECT
	bloom_index_contains('devices_bloom', 1, '\xdeadbeef'::bytea, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) || ' ' ||
	bloom_index_contains('devices_bloom', 1, '\xdeadbeef', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') || ' ' ||
	bloom_index_contains('devices_bloom', 2, '\xdeadbeef', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')}),
	'true true false', 'three columns: bigint, bytea, uuid');
is($coordinator->safe_psql('postgres', q{SELECT
	bloom_index_contains('hard_bloom', $$O'Brien\%s$$, $$a$$ || '$$' || $$b'c\\d@é.example$$) || ' ' ||
	bloom_index_contains('hard_bloom', $$O'Brien\%s$$, $$a$$ || '$$' || $$b'c\\d@e.example$$)}),
	'true false', 'a quote, backslashes, %s, $$ and non-ASCII in values');

# 4. Errors, on the coordinator.
is(sqlstate($coordinator, q{SELECT bloom_index_contains('solo_bloom', 't1', 'a', 'b')}), '42804',
	'three values for a two-column index: 42804');
is(sqlstate($coordinator, q{SELECT bloom_index_contains('solo_bloom', 't1', 42)}), '42804',
	'an integer for a text column: 42804');
is(sqlstate($coordinator, q{SELECT bloom_index_contains_key('members_bloom'::regclass, 'x'::bytea, 'alice')}), '42804',
	'a bytea key for an integer column: 42804');
$coordinator->safe_psql('postgres', q{
	CREATE ROLE outsider LOGIN;
	CREATE ROLE half_reader LOGIN;
	GRANT SELECT (tenant_id) ON solo TO half_reader;
	CREATE ROLE reader LOGIN;
	GRANT SELECT ON members TO reader;
});
is(sqlstate($coordinator, q{SELECT bloom_index_contains('solo_bloom', 't1', 'a')}, 'outsider'), '42501',
	'a role without SELECT on the table: 42501');
is(sqlstate($coordinator, q{SELECT bloom_index_contains('solo_bloom', 't1', 'a')}, 'half_reader'), '42501',
	'a role with SELECT on one of the key columns only: 42501');
is($coordinator->safe_psql('postgres', q{SET ROLE reader; SELECT bloom_index_contains('members_bloom', 7, 'ALICE')}), 't',
	'a role with SELECT has the built-in expression applied for it, and the shards answer');
# An expression of the owner's code: applied for the owner, refused for another role (as on one
# server), whose keys are checked.
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION normalized(value text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN RETURN lower(value); END $$;
	CREATE TABLE handles (org_id int NOT NULL, handle text NOT NULL);
	SELECT create_distributed_table('handles', 'org_id', shard_count => 4);
	CREATE INDEX handles_bloom ON handles USING bloomfilter (org_id, normalized(handle));
	INSERT INTO handles VALUES (3, 'Carol');
	GRANT SELECT ON handles TO reader;
});
is($coordinator->safe_psql('postgres', q{SELECT bloom_index_contains('handles_bloom', 3, 'CAROL') || ' ' ||
	bloom_index_contains('handles_bloom', 4, 'carol')}), 'true false', "the owner's expression applied for the owner");
is(sqlstate($coordinator, q{SELECT bloom_index_contains('handles_bloom', 3, 'CAROL')}, 'reader'), '42501',
	"the owner's expression is not applied for another role: 42501");
is($coordinator->safe_psql('postgres', q{SET ROLE reader; SELECT bloom_index_contains_key('handles_bloom', 3, 'carol')}), 't',
	'another role checks the keys');

# On a worker: the probe of a shard of signups1 by a composite key's hash.
my ($worker, $shard) = (undef, undef);
for my $w (@workers) {
	$shard = $w->safe_psql('postgres', q{SET citus.override_table_visibility = off; SELECT c.relname FROM pg_class c WHERE c.relname ~ '^signups1_[0-9]+$'
		AND c.relkind = 'r' AND pg_relation_size(c.oid) > 0 ORDER BY 1 LIMIT 1});
	if ($shard) { $worker = $w; last; }
}
ok($worker, "a worker holds a non-empty shard of signups1 ($shard)");
my ($tenant, $email) = split /\|/, $worker->safe_psql('postgres', "SELECT tenant_id, email FROM $shard LIMIT 1");
my $hash = sprintf('%u', $worker->safe_psql('postgres', "SELECT bloom_hash('$tenant'::text, '$email'::text)"));
my $probe = sub {
	my ($key, $kind, $index) = @_;
	$index //= 'public.signups1_bloom';
	return "SELECT count(*) FROM (SELECT 1 FROM $shard TABLESAMPLE bloom_index_probe('$index', '$key', '$kind') OFFSET 0) s";
};
is($worker->safe_psql('postgres', $probe->($hash, 'composite:2')), '1',
	"worker: the probe by the hash of a pair the shard holds ($tenant, $email) returns one row");
my $absent_hash = sprintf('%u', $worker->safe_psql('postgres', "SELECT bloom_hash('never'::text, '$email'::text)"));
is($worker->safe_psql('postgres', $probe->($absent_hash, 'composite:2')), '0',
	'worker: none for the hash of a pair the shard does not hold');
for my $bad ([ 'abc', 'composite:2' ], [ '-1', 'composite:2' ], [ ' 1', 'composite:2' ], [ '+1', 'composite:2' ],
	[ '18446744073709551616', 'composite:2' ], [ '', 'composite:2' ], [ $hash, 'composite:' ],
	[ $hash, 'composite:1' ], [ $hash, 'composite:9' ], [ $hash, 'composite:22' ], [ $hash, 'composite:2 ' ]) {
	is(sqlstate($worker, $probe->(@$bad)), '22023', "worker: probe ('$bad->[0]', '$bad->[1]') refused: 22023");
}
is(sqlstate($worker, $probe->($hash, 'composite:3')), '42804',
	'worker: a count of key columns other than the index\'s: 42804');
is(sqlstate($worker, $probe->('18446744073709551615', 'composite:2')), 'none',
	'worker: the largest hash is well formed');
is(sqlstate($worker, $probe->($email, '25')), '42804',
	'worker: the one-column form on a two-column index: 42804');
is(sqlstate($worker, $probe->($hash, 'composite:2', 'public.signups1_email_bloom')), '42804',
	'worker: the composite form on a one-column index: 42804');

# On the shard, the probe checks what a check needs: SELECT on both key columns of the shard.
# half_reader, given SELECT on the shard's tenant_id alone (enough for a query that reads no
# column), is refused; with email too, answered.
$worker->safe_psql('postgres', "SET citus.enable_ddl_propagation = off; GRANT SELECT (tenant_id) ON $shard TO half_reader");
is(sqlstate($worker, $probe->($hash, 'composite:2'), 'half_reader'), '42501',
	'worker: the composite probe by a role with SELECT on one key column of the shard: 42501');
$worker->safe_psql('postgres', "SET citus.enable_ddl_propagation = off; GRANT SELECT (email) ON $shard TO half_reader");
is($worker->safe_psql('postgres', "SET ROLE half_reader; " . $probe->($hash, 'composite:2')), '1',
	'worker: with SELECT on both key columns, answered');

done_testing();
