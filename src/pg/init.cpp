// What the library does once when a server process loads it.
#include "agg_spill.hpp"

extern "C" {
void _PG_init(void);
}

extern "C" void _PG_init(void) {
    // The fastest block check this CPU has, timed here rather than in a static initializer, so
    // that it runs in the server process that will use it, once.
    bloomfilter::choose_check_path();
    bloomfilter::register_index_options();
    bloomfilter::delete_exported_files_at_exit();
}
