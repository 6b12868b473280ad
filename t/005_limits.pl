# Limits: the largest filter a PostgreSQL value can hold, statement_timeout cancelling long loops
# within about a second, and the memory of bloom_agg over 10M rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('limits', [ 'max_parallel_workers_per_gather = 0', 'work_mem = 64MB' ]);
$node->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

# The largest filter: 891,720,653 keys at 1% fit under the 1 GB limit; one more key does not.
my $largest = 891720653;
my $bytes = $node->safe_psql('postgres', "SELECT bytes FROM bloom_info(bloom_empty($largest, 0.01))");
cmp_ok($bytes, '<=', 1073741823, "largest filter: capacity $largest at 1% is $bytes bytes");
my ($code) = sql_error($node, 'postgres', 'SELECT bloom_empty(' . ($largest + 1) . ', 0.01)');
is($code, '22023', 'one key more fails with invalid_parameter_value');
$node->safe_psql('postgres', "CREATE TABLE huge (id int, f bloom);
	INSERT INTO huge SELECT 1, bloom_add(bloom_empty($largest, 0.01), 'user7\@mail.com'::text)");
my ($found, $ghost, $stored) = split /\|/, $node->safe_psql('postgres',
	q{SELECT bloom_contains(f, 'user7@mail.com'), bloom_contains(f, 'ghost@mail.com'), pg_column_size(f) FROM huge});
is("$found $ghost", 't f', "largest filter stored ($stored bytes, out of line): a member found, a stranger not (slice reads)");
($code) = sql_error($node, 'postgres', 'SELECT f::text FROM huge');
is($code, '54000', 'its text form, over 1 GB, is refused with program_limit_exceeded');
$node->safe_psql('postgres', 'DROP TABLE huge');

# cancelled(SQL): the SQL under statement_timeout = 300ms ends with query_canceled within 1.5 s.
sub cancelled {
	my ($what, $sql) = @_;
	my ($code, $seconds) = sql_error($node, 'postgres', "SET statement_timeout = '300ms'; $sql");
	ok($code eq '57014' && $seconds < 1.5, sprintf('cancel %s: %s after %.2f s', $what, $code, $seconds));
}
$node->safe_psql('postgres',
	q{CREATE TABLE keys AS SELECT array_agg('user' || i || '@mail.com') AS a FROM generate_series(1, 10000000) i});
cancelled('bloom_add(f, text[10M])', 'SELECT bloom_add(bloom_empty(10000000), a) IS NULL FROM keys');
cancelled('bloom_contains(f, text[10M])', 'SELECT bloom_contains(bloom_empty(10000000), a) IS NULL FROM keys');
cancelled('bloom_union of 600 MB filters', 'SELECT bloom_union(bloom_empty(500000000), bloom_empty(500000000)) IS NULL');
$node->safe_psql('postgres', q{DROP TABLE keys;
	CREATE TABLE emails AS SELECT 'user' || i || '@mail.com' AS email FROM generate_series(1, 10000000) i});
# Serial, so that the whole of it runs in this backend's loops, and a timeout well under its
# length (about a second), so that it fires whatever the machine's speed.
cancelled('bloom_agg over 10M rows', 'SET max_parallel_workers_per_gather = 0; SELECT bloom_agg(email) IS NULL FROM emails');

# Memory of bloom_agg(email) over 10M distinct rows: at most the filter plus 16 bytes per
# distinct key, above what count(email) over the same rows needs (the backend's peak RSS).
my ($base, $agg, $filter_bytes) = split /\|/, $node->safe_psql('postgres', q{
SELECT pg_backend_pid() AS pid \gset
SELECT count(email) FROM emails \g /dev/null
SELECT (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024 AS base \gset
SELECT bloom_agg(email) IS NULL FROM emails \g /dev/null
SELECT :base, (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024,
       (SELECT bytes FROM bloom_info(bloom_empty(10000000)));
});
my $bound = $filter_bytes + 16 * 10_000_000;
my $used = $agg - $base;
cmp_ok($used, '<=', $bound, sprintf('bloom_agg memory, 10M rows: peak RSS grew by %d MiB; bound: filter %d MiB + 16 B x 10M = %d MiB',
	$used / 1048576, $filter_bytes / 1048576, $bound / 1048576));

$node->stop;
done_testing();
