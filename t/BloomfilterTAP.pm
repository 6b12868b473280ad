# Helpers shared by the TAP tests in t/: nodes with the extension's usual settings, SQL errors
# read as SQLSTATE and time, pgbench in the background, crash and restart.
package BloomfilterTAP;
use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(usleep time);

our @EXPORT = qw(init_node new_node citus_cluster ask create_users sql_error node_run start_pgbench
  finish_pgbench stop_pgbench kill9_and_restart $MISSING_USERS $VERIFY_USERS);

# init_node(NODE, %init_options): initdb for NODE with an encoding and a locale of its own (UTF8,
# C.UTF-8), never the caller's: with no LANG, initdb would pick SQL_ASCII and the C locale.
# %init_options go to init (allows_streaming => 1, say; extra => [...] adds initdb options).
sub init_node {
	my ($node, %init_options) = @_;
	my @extra = ('--encoding=UTF8', '--locale=C.UTF-8', @{ $init_options{extra} || [] });
	$node->init(%init_options, extra => \@extra);
	return $node;
}

# new_node(NAME, [SETTING, ...], %init_options): a started node, made with init_node; SETTINGs
# are postgresql.conf lines. Room for pgbench's clients and the tests' tables whatever init chose
# (allows_streaming makes both tiny); statements are not logged, since the tests run hundreds of
# thousands of them.
sub new_node {
	my ($name, $settings, %init_options) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	init_node($node, %init_options);
	$node->append_conf('postgresql.conf', join("\n", 'max_connections = 50', 'shared_buffers = 256MB',
		'log_statement = none', @{ $settings || [] }) . "\n");
	$node->start;
	return $node;
}

# citus_cluster(SHARED_BUFFERS, WORKER_NAME, ...): a Citus coordinator and its workers (named
# worker1 and worker2 unless given), each node with citus created and added, or the test file
# skipped when Citus is not installed. Citus reaches the nodes, the coordinator included, over TCP
# on loopback (the test's nodes listen on a Unix socket only by default; initdb -A trust trusts
# 127.0.0.1 too), without TLS: Citus's default node_conninfo, sslmode=require, would have CREATE
# EXTENSION citus turn ssl on with a self-signed certificate in each data directory. Multi-shard
# writes use two-phase commit. Returns (coordinator, worker, ...).
sub citus_cluster {
	my ($shared_buffers, @names) = @_;
	my $sharedir = `pg_config --sharedir`;
	chomp $sharedir;
	plan skip_all => "Citus is not installed ($sharedir/extension/citus.control): test/citus.sh installs it"
		unless -f "$sharedir/extension/citus.control";
	my @settings = (q{shared_preload_libraries = 'citus'}, 'max_prepared_transactions = 100',
		q{listen_addresses = '127.0.0.1'}, q{citus.node_conninfo = 'sslmode=disable'},
		"shared_buffers = $shared_buffers");
	my $coordinator = new_node('coordinator', \@settings);
	my @workers = map { new_node($_, \@settings) } (@names ? @names : qw(worker1 worker2));
	$_->safe_psql('postgres', 'CREATE EXTENSION citus') for $coordinator, @workers;
	$coordinator->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coordinator->port . ')');
	$coordinator->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')')
		for @workers;
	return ($coordinator, @workers);
}

# ask(SESSION, SQL): a query in SESSION (a background_psql session): its output followed by its error, if any (a test fails there rather than dies).
sub ask {
	my ($session, $sql) = @_;
	my $output = $session->query($sql);
	my $error = $session->{stderr};
	$session->{stderr} = '';
	return $error eq '' ? $output : "$output$error";
}

# create_users(NODE, ROWS): the extension and a users table of ROWS emails with two bloomfilter
# indexes of fixed size (their filters compare with bloom_agg's), users_email_bloom on email and
# users_email_ci_bloom on lower(email).
sub create_users {
	my ($node, $rows) = @_;
	$node->safe_psql('postgres', qq{
		CREATE EXTENSION bloomfilter;
		CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
		INSERT INTO users (email) SELECT 'user' || i || '\@mail.com' FROM generate_series(1, $rows) i;
		CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000, expansion = 0);
		CREATE INDEX users_email_ci_bloom ON users USING bloomfilter (lower(email)) WITH (capacity = 100000, expansion = 0);
	});
}

# The rows of users that either index misses (the second through its expression).
our $MISSING_USERS = q{SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email)
	OR NOT bloom_index_contains('users_email_ci_bloom', upper(email))};

# bloom_index_verify of both indexes of users: 't|t' when each checked every row.
our $VERIFY_USERS = q{SELECT bloom_index_verify('users_email_bloom') = count(*),
	bloom_index_verify('users_email_ci_bloom') = count(*) FROM users};

# sql_error(NODE, DATABASE, SQL): runs SQL in one psql session and returns the SQLSTATE of its
# first error ('none' without one) and the seconds the session took.
sub sql_error {
	my ($node, $database, $sql) = @_;
	my ($stdout, $stderr) = ('', '');
	my $started = time;
	$node->psql($database, $sql, stdout => \$stdout, stderr => \$stderr, on_error_stop => 1,
		extra_params => [ '-v', 'VERBOSITY=sqlstate' ]);
	my $seconds = time - $started;
	my ($code) = $stderr =~ /ERROR:\s+([0-9A-Z]{5})/;
	return ($code // 'none', $seconds);
}

# node_run(NODE, COMMAND...): a client program against NODE; returns (success, stdout, stderr).
sub node_run {
	my ($node, @command) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(\@command, '<', \undef, '>', \$stdout, '2>', \$stderr);
	return ($ok, $stdout, $stderr);
}

# start_pgbench(NODE, DATABASE, ARGUMENT...): pgbench -n in the background; finish_pgbench
# waits for it and returns (success, stdout, stderr); stop_pgbench kills it.
sub start_pgbench {
	my ($node, $database, @arguments) = @_;
	my $run = { out => '', err => '' };
	$run->{handle} = IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, @arguments, $database ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err});
	return $run;
}

sub finish_pgbench {
	my ($run) = @_;
	my $ok = $run->{handle}->finish;
	return ($ok, $run->{out}, $run->{err});
}

sub stop_pgbench {
	my ($run) = @_;
	$run->{handle}->kill_kill;
}

# SIGKILL of the postmaster, then a restart: crash recovery. The old backends exit when they
# notice the postmaster gone; until then the old shared memory is in use and a new postmaster
# refuses to start, so the start is retried.
sub kill9_and_restart {
	my ($node) = @_;
	$node->kill9;
	my $started = 0;
	for (my $try = 0; $try < 600 && !$started; $try++) {
		$started = $node->start(fail_ok => 1);
		next if $started;
		usleep(100_000);
		$node->stop('fast', fail_ok => 1);
	}
	ok($started, $node->name . ' restarts after SIGKILL');
	return $started;
}

1;
