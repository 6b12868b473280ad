# CREATE INDEX within maintenance_work_mem: a 100M-capacity filter (about 115 MiB) built with
# maintenance_work_mem = 8MB keeps the backend's peak memory under 32 MB, and its pages hold the
# bytes a build with 1GB gives, those of bloom_agg(col, capacity, error_rate).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

# Small shared buffers: the backend's peak RSS counts the shared buffers it touches, and writing
# the index passes every one of its pages through them.
my $node = new_node('index_build', [ 'shared_buffers = 16MB', 'max_parallel_maintenance_workers = 0' ]);
$node->safe_psql('postgres', q{CREATE EXTENSION bloomfilter;
	CREATE TABLE emails AS SELECT 'user' || i || '@mail.com' AS email FROM generate_series(1, 300000) i;
	INSERT INTO emails VALUES (NULL);
	VACUUM ANALYZE emails});

my $capacity = 100_000_000;
my $filter_bytes = $node->safe_psql('postgres', "SELECT bytes FROM bloom_info(bloom_empty($capacity))");

# peak_growth(maintenance_work_mem, index): how much the backend's peak RSS grew over CREATE INDEX.
sub peak_growth {
	my ($memory, $index) = @_;
	my ($base, $peak) = split /\|/, $node->safe_psql('postgres', qq{
SET maintenance_work_mem = '$memory';
SELECT pg_backend_pid() AS pid \\gset
SELECT count(email) FROM emails \\g /dev/null
SELECT (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024 AS base \\gset
CREATE INDEX $index ON emails USING bloomfilter (email) WITH (capacity = $capacity, expansion = 0);
SELECT :base, (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint * 1024;
});
	return $peak - $base;
}

my $sorted = peak_growth('8MB', 'emails_sorted');
cmp_ok($sorted, '<', 32 * 1048576, sprintf(
	'CREATE INDEX of a %.1f MiB filter, maintenance_work_mem = 8MB: peak RSS grew by %.1f MiB (bound 32 MiB)',
	$filter_bytes / 1048576, $sorted / 1048576));
my $in_memory = peak_growth('1GB', 'emails_in_memory');
cmp_ok($in_memory, '>', $filter_bytes, sprintf(
	'the same with maintenance_work_mem = 1GB, in memory: peak RSS grew by %.1f MiB', $in_memory / 1048576));

is($node->safe_psql('postgres', q{SELECT bloom_index_filter('emails_sorted') = bloom_index_filter('emails_in_memory')}),
	't', 'the index built in slices holds the bytes of the one built in memory');
is($node->safe_psql('postgres',
	"SELECT bloom_index_filter('emails_sorted') = bloom_agg(email, $capacity, 0.01) FROM emails"),
	't', 'and those of bloom_agg(email, capacity, 0.01)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM emails WHERE NOT bloom_index_contains('emails_sorted', email)}),
	'0', 'every row found through the index');

$node->stop;
done_testing();
