/* The declarations xxhash.h takes from <string.h>, for a build without a C library. */
#include <stddef.h>
void *memcpy(void *restrict destination, const void *restrict source, size_t size);
void *memset(void *destination, int value, size_t size);
int memcmp(const void *a, const void *b, size_t size);
