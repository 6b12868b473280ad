/* The hash and placement of many keys in one call, for Filter.containsMany (src/batch.ts):
 * XXH3 of xxHash (xxhash.h, as the server hashes) and the block and bit positions of
 * docs/format.md ("Placing a key"), both format versions. Compiled to WebAssembly by
 * scripts/build-wasm.mjs, without a C library (include/ holds the few declarations xxhash.h needs).
 *
 * Key i is the bytes [offsets[i], offsets[i + 1]) of keys, the top bit of each offset aside: set
 * in offsets[i + 1], the key is a JavaScript string in UTF-16LE, hashed as its UTF-8 (converted
 * into scratch, which has room for 3 bytes per UTF-16 unit of the longest). For each key, out
 * receives its block, then its `hashes` bit positions inside the block: 1 + hashes words per key. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define UTF16 0x80000000u

/* The UTF-8 of count UTF-16LE units, as JavaScript's TextEncoder (and V8 handing a string to
 * native code) writes it: an unpaired surrogate becomes U+FFFD. Returns the bytes written. */
static uint32_t utf8_from_utf16(const uint8_t *units, uint32_t count, uint8_t *out)
{
    uint8_t *o = out;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t c, next;
        /* Four ASCII units at a time. */
        while (i + 4 <= count) {
            uint64_t four = XXH_readLE64(units + 2 * i);
            if (four & 0xff80ff80ff80ff80ULL)
                break;
            o[0] = (uint8_t) four;
            o[1] = (uint8_t) (four >> 16);
            o[2] = (uint8_t) (four >> 32);
            o[3] = (uint8_t) (four >> 48);
            o += 4;
            i += 4;
        }
        if (i == count)
            break;
        c = units[2 * i] | (uint32_t) units[2 * i + 1] << 8;
        if (c < 0x80) {
            *o++ = (uint8_t) c;
        } else if (c < 0x800) {
            *o++ = (uint8_t) (0xc0 | c >> 6);
            *o++ = (uint8_t) (0x80 | (c & 0x3f));
        } else if (c < 0xd800 || c > 0xdfff) {
            *o++ = (uint8_t) (0xe0 | c >> 12);
            *o++ = (uint8_t) (0x80 | (c >> 6 & 0x3f));
            *o++ = (uint8_t) (0x80 | (c & 0x3f));
        } else if (c <= 0xdbff && i + 1 < count
                   && ((next = units[2 * i + 2] | (uint32_t) units[2 * i + 3] << 8) & 0xfc00) == 0xdc00) {
            uint32_t point = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
            *o++ = (uint8_t) (0xf0 | point >> 18);
            *o++ = (uint8_t) (0x80 | (point >> 12 & 0x3f));
            *o++ = (uint8_t) (0x80 | (point >> 6 & 0x3f));
            *o++ = (uint8_t) (0x80 | (point & 0x3f));
            i++;
        } else {
            *o++ = 0xef;
            *o++ = 0xbf;
            *o++ = 0xbd;
        }
    }
    return (uint32_t) (o - out);
}

/* Key i's bytes: where they are and how many. */
static const uint8_t *key_bytes(const uint8_t *keys, const uint32_t *offsets, uint32_t i,
                                uint8_t *scratch, size_t *length)
{
    uint32_t start = offsets[i] & ~UTF16, end = offsets[i + 1];
    if (!(end & UTF16)) {
        *length = end - start;
        return keys + start;
    }
    *length = utf8_from_utf16(keys + start, ((end & ~UTF16) - start) / 2, scratch);
    return scratch;
}

static uint64_t fin(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* floor(h * blocks / 2^64), without 128-bit arithmetic (wasm32 has none). */
static uint32_t block_of(uint64_t h, uint32_t blocks)
{
    uint64_t high = (h >> 32) * blocks, low = (h & 0xffffffffULL) * blocks;
    return (uint32_t) ((high + (low >> 32)) >> 32);
}

/* Format version 2: h = XXH3_64(key); block = h * blocks >> 64; position i = the top block_log2
 * bits of h * M_i (mod 2^64), M_i = fin((i + 1) * 0x9e3779b97f4a7c15) | 1. */
__attribute__((export_name("bloom_place_v2")))
void bloom_place_v2(const uint8_t *keys, const uint32_t *offsets, uint32_t count, uint8_t *scratch,
                    uint32_t blocks, uint32_t block_log2, uint32_t hashes, uint32_t *out)
{
    enum { KEPT = 64 };
    uint64_t multipliers[KEPT];
    uint32_t shift = 64 - block_log2;
    for (uint32_t j = 0; j < hashes && j < KEPT; j++)
        multipliers[j] = fin((uint64_t) (j + 1) * 0x9e3779b97f4a7c15ULL) | 1;
    for (uint32_t i = 0; i < count; i++, out += 1 + hashes) {
        size_t length;
        const uint8_t *key = key_bytes(keys, offsets, i, scratch, &length);
        uint64_t h = XXH3_64bits(key, length);
        out[0] = block_of(h, blocks);
        for (uint32_t j = 0; j < hashes; j++) {
            uint64_t m = j < KEPT ? multipliers[j] : fin((uint64_t) (j + 1) * 0x9e3779b97f4a7c15ULL) | 1;
            out[1 + j] = (uint32_t) ((h * m) >> shift);
        }
    }
}

/* A layered value (format version 3): its layers are version 2 filters, placing a key from the
 * same h, hashed once. `layers` holds layer_count (blocks, block_log2, hashes, start) quadruples,
 * start the byte of the value where the layer's blocks begin, in the order the caller tests them.
 * For each key, out receives, layer after layer, the number in the value of each of its bits
 * (8 x its block's first byte + its position): sum(hashes) words per key, for a value of less
 * than 2^29 bytes. */
__attribute__((export_name("bloom_place_layers")))
void bloom_place_layers(const uint8_t *keys, const uint32_t *offsets, uint32_t count, uint8_t *scratch,
                        const uint32_t *layers, uint32_t layer_count, uint32_t *out)
{
    enum { KEPT = 64 };
    uint64_t multipliers[KEPT];
    uint32_t most = 0;
    for (uint32_t n = 0; n < layer_count; n++)
        if (layers[4 * n + 2] > most)
            most = layers[4 * n + 2];
    for (uint32_t j = 0; j < most && j < KEPT; j++)
        multipliers[j] = fin((uint64_t) (j + 1) * 0x9e3779b97f4a7c15ULL) | 1;
    for (uint32_t i = 0; i < count; i++) {
        size_t length;
        const uint8_t *key = key_bytes(keys, offsets, i, scratch, &length);
        uint64_t h = XXH3_64bits(key, length);
        for (uint32_t n = 0; n < layer_count; n++) {
            const uint32_t *layer = layers + 4 * n;
            uint32_t shift = 64 - layer[1], hashes = layer[2];
            uint32_t first = (layer[3] + block_of(h, layer[0]) * (1u << (layer[1] - 3))) * 8;
            for (uint32_t j = 0; j < hashes; j++) {
                uint64_t m = j < KEPT ? multipliers[j] : fin((uint64_t) (j + 1) * 0x9e3779b97f4a7c15ULL) | 1;
                *out++ = first + (uint32_t) ((h * m) >> shift);
            }
        }
    }
}

/* Format version 1: XXH3_128 (low, high); block = high * blocks >> 64; positions fin(g) >> shift
 * for g = low, low + step, ..., step = (high rotated by 32) | 1. */
__attribute__((export_name("bloom_place_v1")))
void bloom_place_v1(const uint8_t *keys, const uint32_t *offsets, uint32_t count, uint8_t *scratch,
                    uint32_t blocks, uint32_t block_log2, uint32_t hashes, uint32_t *out)
{
    uint32_t shift = 64 - block_log2;
    for (uint32_t i = 0; i < count; i++, out += 1 + hashes) {
        size_t length;
        const uint8_t *key = key_bytes(keys, offsets, i, scratch, &length);
        XXH128_hash_t h = XXH3_128bits(key, length);
        uint64_t step = ((h.high64 << 32) | (h.high64 >> 32)) | 1, g = h.low64;
        out[0] = block_of(h.high64, blocks);
        for (uint32_t j = 0; j < hashes; j++, g += step)
            out[1 + j] = (uint32_t) (fin(g) >> shift);
    }
}

/* What xxhash.h's streaming functions refer to; the one-shot hashes above never call them. */
void *malloc(size_t size)
{
    (void) size;
    return 0;
}

void free(void *pointer)
{
    (void) pointer;
}

__attribute__((no_builtin("memcpy")))
void *memcpy(void *restrict destination, const void *restrict source, size_t size)
{
    uint8_t *d = destination;
    const uint8_t *s = source;
    while (size--)
        *d++ = *s++;
    return destination;
}
