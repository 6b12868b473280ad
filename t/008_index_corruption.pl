# Corrupted bloomfilter index files: each way of reading or writing the index (a check, the whole
# filter, the changes since a WAL position, an INSERT) answers data_corrupted (XX002), never a
# crash, a read past a page or a silent "absent". Each index is damaged with the server stopped,
# so the first read after the start comes from the file. The indexes are of fixed size
# (expansion = 0): a layered index takes a data page of zeros for one added ahead of its layer,
# holding no bit (docs/format.md, "Layout 2"); bloom_index_verify finds the keys it lacks.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BloomfilterTAP;

my $node = new_node('corruption');
$node->safe_psql('postgres', 'CREATE EXTENSION bloomfilter');

my $page_size = 8192;
my $special = $page_size - 8;    # MAXALIGN of the 4-byte special space: flags, page id

# Each case: a table of its own, 20,000 keys, an index of 15 data pages; then a change to its file.
my %damage = (
	'a data page of zeros' => sub { write_at($_[0], $page_size, "\0" x $page_size) },
	'a data page without special space' => sub { write_at($_[0], $page_size + 16, pack('S', $page_size)) },
	'a data page with another page id' => sub { write_at($_[0], $page_size + $special + 2, pack('S', 0)) },
	'a metapage with another magic number' => sub { write_at($_[0], 24, 'XXXX') },
	'a metapage with more data pages than the file holds' => sub { write_at($_[0], 36, pack('L', 1000)) },
	'a file cut after its metapage' => sub { truncate($_[0], $page_size) or die "truncate $_[0]: $!" },
);

sub write_at {
	my ($file, $offset, $bytes) = @_;
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	seek($fh, $offset, 0) or die "seek $file: $!";
	print $fh $bytes or die "write $file: $!";
	close $fh or die "close $file: $!";
}

my @cases = sort keys %damage;
my %file;
for my $i (0 .. $#cases) {
	$node->safe_psql('postgres', qq{
		CREATE TABLE c$i (k text);
		INSERT INTO c$i SELECT 'user' || g || '\@mail.com' FROM generate_series(1, 20000) g;
		CREATE INDEX c${i}_k ON c$i USING bloomfilter (k) WITH (capacity = 100000, expansion = 0);
	});
	$file{$i} = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('c${i}_k')");
}
my $pages = $node->safe_psql('postgres', "SELECT pg_relation_size('c0_k') / $page_size");
cmp_ok($pages, '>=', 3, "each index has a metapage and data pages ($pages pages)");
$node->stop;
$damage{ $cases[$_] }->($file{$_}) for 0 .. $#cases;
$node->start;

for my $i (0 .. $#cases) {
	# Every key of the table is checked, so a key placed on the damaged data page is among them.
	my %reads = (
		'bloom_index_contains' => "SELECT count(*) FROM c$i WHERE bloom_index_contains('c${i}_k', k)",
		'bloom_index_filter' => "SELECT length(bloom_index_filter('c${i}_k')::bytea)",
		'bloom_index_changes' => "SELECT count(*) FROM bloom_index_changes('c${i}_k', '0/0')",
		'INSERT' => "INSERT INTO c$i SELECT 'new' || g || '\@mail.com' FROM generate_series(1, 2000) g",
	);
	for my $what (sort keys %reads) {
		my ($code) = sql_error($node, 'postgres', $reads{$what});
		is($code, 'XX002', "$cases[$i]: $what fails with data_corrupted");
	}
}
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated/, 'no backend crashed');

# REINDEX makes each index whole again.
for my $i (0 .. $#cases) {
	$node->safe_psql('postgres', "REINDEX INDEX c${i}_k");
	is($node->safe_psql('postgres', "SELECT count(*) FROM c$i WHERE NOT bloom_index_contains('c${i}_k', k)"),
		'0', "$cases[$i]: after REINDEX, no false negative");
}

done_testing();
