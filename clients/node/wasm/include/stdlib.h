/* The declarations xxhash.h takes from <stdlib.h>, for a build without a C library. */
#include <stddef.h>
void *malloc(size_t size);
void free(void *pointer);
