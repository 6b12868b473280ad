# Crash recovery with fsync = on: 8 pgbench clients add to a single-row filter and insert into a
# table with a bloomfilter index (1 transaction in 10 rolled back), a checkpoint half way, then
# SIGKILL of the postmaster. After recovery every committed email is found, the single-row filter
# equals one rebuilt from the committed rows, and the index holds at least their bits.
#   BLOOMFILTER_CRASH_AFTER   seconds of adds before the kill (4)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use BloomfilterTAP;

my $crash_after = $ENV{BLOOMFILTER_CRASH_AFTER} // 4;
my $clients = 8;
my $node = new_node('crash', [ 'fsync = on', 'synchronous_commit = on', 'max_connections = 40' ]);
$node->safe_psql('postgres', q{
CREATE EXTENSION bloomfilter;
CREATE EXTENSION amcheck;
-- A single-row filter (about 120 KB, out of line): each add rewrites it and its TOAST chunks.
CREATE TABLE f (id int PRIMARY KEY, f bloom NOT NULL);
INSERT INTO f VALUES (1, bloom_empty(100000));
CREATE TABLE committed (email text NOT NULL);
-- A bloomfilter index: each insert sets its key's bits in one page of the index, WAL-logged.
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 1000000, expansion = 0);
VACUUM ANALYZE;
CHECKPOINT;
});
my $work = $node->basedir;
append_to_file("$work/single.sql", q{\set n random(1, 9000000000000000000)
BEGIN;
INSERT INTO committed (email) VALUES ('s' || :client_id || '-' || :n || '@mail.com');
UPDATE f SET f = bloom_add(f, 's' || :client_id || '-' || :n || '@mail.com') WHERE id = 1;
COMMIT;
});
append_to_file("$work/index.sql", q{\set n random(1, 9000000000000000000)
INSERT INTO users (email) VALUES ('m' || :client_id || '-' || :n || '@mail.com');
});
# Adds that roll back must leave no trace in the single-row filter (an index keeps their bits).
append_to_file("$work/rollback.sql", q{\set n random(1, 9000000000000000000)
BEGIN;
INSERT INTO committed (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
UPDATE f SET f = bloom_add(f, 'rb' || :client_id || '-' || :n || '@mail.com') WHERE id = 1;
INSERT INTO users (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
ROLLBACK;
});

my $pgbench = start_pgbench($node, 'postgres', '-c', $clients, '-j', '2', '-T', '60', '-M', 'prepared',
	'-f', "$work/single.sql\@4", '-f', "$work/index.sql\@5", '-f', "$work/rollback.sql\@1");
# A checkpoint half way, so that recovery starts from one taken while adds were running.
sleep($crash_after / 2);
$node->safe_psql('postgres', 'CHECKPOINT');
sleep($crash_after / 2);
my $committed_sql = q{SELECT (SELECT count(*) FROM committed) || ' ' || (SELECT count(*) FROM users) - 100000};
my ($single_before, $index_before) = split / /, $node->safe_psql('postgres', $committed_sql);
# A psql session that has just ended may still be listed as it exits: asked until it is gone.
my $backends = q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()};
my $connected = $node->poll_query_until('postgres', $backends, $clients) ? $clients : $node->safe_psql('postgres', $backends);
is($connected, $clients, "$clients pgbench clients are adding when the postmaster is killed, after $crash_after s");
kill9_and_restart($node);
# pgbench fails once its connections break: expected here, but no SQL error may come before.
my (undef, $out, $err) = finish_pgbench($pgbench);
unlike($out . $err, qr/ERROR:/, 'no SQL error before the kill') or diag($err);

my $log = slurp_file($node->logfile);
like($log, qr/database system was interrupted/, 'the restart ran crash recovery');
like($log, qr/redo done/, 'and replayed the WAL');
is($node->safe_psql('postgres', 'SHOW fsync'), 'on', 'with fsync = on');
my ($single_after, $index_after) = split / /, $node->safe_psql('postgres', $committed_sql);
cmp_ok($single_before, '>', 0, "single-row filter adds committed before the kill ($single_before)");
cmp_ok($index_before, '>', 0, "indexed inserts committed before the kill ($index_before)");
cmp_ok($single_after, '>=', $single_before, "every single-row add seen committed before the kill is still there ($single_after)");
cmp_ok($index_after, '>=', $index_before, "every indexed insert seen committed before the kill is still there ($index_after)");
is($node->safe_psql('postgres', q{SELECT (SELECT count(*) FROM verify_heapam('f', check_toast => true))
		+ (SELECT count(*) FROM verify_heapam('users', check_toast => true))}),
	'0', 'no corruption in the heap and TOAST of the single-row filter and the indexed table (amcheck)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM committed c, f WHERE f.id = 1 AND NOT bloom_contains(f.f, c.email)}),
	'0', 'single-row filter: every committed email found');
is($node->safe_psql('postgres',
		q{SELECT f = (SELECT coalesce(bloom_agg(email, 100000, 0.01), bloom_empty(100000)) FROM committed) FROM f WHERE id = 1}),
	't', 'single-row filter equals bloom_agg over the committed emails (nothing lost, nothing rolled back kept)');
is($node->safe_psql('postgres', q{SELECT indisvalid, (SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
		FROM pg_index WHERE indexrelid = 'users_email_bloom'::regclass}),
	't|0', 'bloomfilter index: valid, every committed email found');
is($node->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') = count(*) FROM users}),
	't', 'bloom_index_verify after crash recovery: no key missing');
# Rolled-back inserts, and those in flight at the kill, may have left bits: the index holds
# every bit of bloom_agg over the committed rows, and perhaps more. Its union with that filter
# is itself (past the 36-byte header, whose count of keys is the build's).
my $agg_sql = q{SELECT bloom_agg(email, 1000000, 0.01) FROM users};
is($node->safe_psql('postgres', qq{SELECT substring((bloom_index_filter('users_email_bloom') | ($agg_sql))::bytea FROM 37)
		= substring(bloom_index_filter('users_email_bloom')::bytea FROM 37)}),
	't', 'bloomfilter index holds every bit of bloom_agg over the committed rows');
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY users_email_bloom');
is($node->safe_psql('postgres', qq{SELECT bloom_index_filter('users_email_bloom') = ($agg_sql), needs_rebuild
		FROM bloom_index_info('users_email_bloom')}),
	't|f', 'after REINDEX CONCURRENTLY the index equals bloom_agg over the committed rows and needs no rebuild');
is($node->safe_psql('postgres', q{SELECT bloom_index_verify('users_email_bloom') = count(*) FROM users}),
	't', 'bloom_index_verify after REINDEX CONCURRENTLY: no key missing');

$node->stop;
done_testing();
