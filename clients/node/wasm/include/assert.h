/* <assert.h> for a build without a C library: xxhash.h's assertions are off (XXH_DEBUGLEVEL 0). */
#define assert(condition) ((void) 0)
#define static_assert _Static_assert
