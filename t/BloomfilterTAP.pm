# Helpers shared by the TAP tests in t/.
package BloomfilterTAP;
use strict;
use warnings;
use Exporter 'import';
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(kill9_and_restart);

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
