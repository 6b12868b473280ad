# bloom_index_info and bloom_index_layers within a page's memory: on an index whose filter is
# over 100 MB, the backend's peak RSS grows by under 2 MiB over each (bloom_index_info copied the
# filter whole before: 115 MiB), and their counts are those of bloom_info over the filter itself.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

# The index's pages fit in shared_buffers: a first call maps them into the backend (shared pages
# count in its RSS), and the measured call finds them there.
my $node = new_node('index_info_memory',
	[ 'shared_buffers = 256MB', 'maintenance_work_mem = 256MB', 'jit = off' ]);
$node->safe_psql('postgres', q{CREATE EXTENSION bloomfilter;
	CREATE TABLE emails AS SELECT 'user' || i || '@mail.com' AS email FROM generate_series(1, 100000) i;
	CREATE INDEX emails_bloom ON emails USING bloomfilter (email) WITH (capacity = 100000000, expansion = 0)});
my $filter_bytes = $node->safe_psql('postgres', q{SELECT bytes FROM bloom_index_info('emails_bloom')});
cmp_ok($filter_bytes, '>=', 100_000_000, sprintf('the filter holds %.1f MiB', $filter_bytes / 1048576));

# peak_growth(QUERY): how much the backend's peak RSS (VmHWM) grew over QUERY, run after the same
# query once and its peak reset to its RSS then (writing 5 to /proc/<pid>/clear_refs).
sub peak_growth {
	my ($query) = @_;
	my $vmhwm = q{(regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024};
	my ($base, $peak) = split /\|/, $node->safe_psql('postgres', qq{
SELECT pg_backend_pid() AS pid \\gset
SELECT '/proc/' || :pid || '/clear_refs' AS clear_refs \\gset
$query \\g /dev/null
COPY (SELECT 5) TO :'clear_refs';
SELECT $vmhwm AS base \\gset
$query \\g /dev/null
SELECT :base, $vmhwm;
});
	return $peak - $base;
}

for my $function ('bloom_index_info', 'bloom_index_layers') {
	my $growth = peak_growth("SELECT * FROM $function('emails_bloom')");
	cmp_ok($growth, '<', 2 * 1048576, sprintf(
		'%s of a %.1f MiB filter: peak RSS grew by %.2f MiB (bound 2 MiB)',
		$function, $filter_bytes / 1048576, $growth / 1048576));
}

# The same counts as bloom_info of the filter, copied out (in a session of its own, after).
is($node->safe_psql('postgres', q{
	SELECT (i.bits_set, i.fill, i.estimated_count, i.estimated_error_rate)
	     = (b.bits_set, b.fill, b.estimated_count, b.estimated_error_rate)
	   AND (l.fill, l.estimated_error_rate) = (b.fill, b.estimated_error_rate)
	   AND i.bits_set > 0
	FROM bloom_index_info('emails_bloom') i, bloom_index_layers('emails_bloom') l,
	     bloom_info(bloom_index_filter('emails_bloom')) b}),
	't', 'bloom_index_info and bloom_index_layers count what bloom_info counts in the filter');

$node->stop;
done_testing();
