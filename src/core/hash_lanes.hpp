// The version 2 hash (XXH3-64, no seed) of eight short inputs at once, one in each 64-bit lane
// of an AVX-512 register: eight 8-byte words (an integer key's bytes, the parts of a composite
// key), or eight 16-byte pairs of words (a composite key of two parts: CompositeKey::hash()).
// XXH3 computes an input of 4 to 8 bytes, and one of 9 to 16, with a handful of multiplies and
// shifts and no loop; here they run in eight lanes, where hash_bytes() runs them one input at a
// time, one chain of dependent multiplies after another. The same steps as xxhash.h's
// XXH3_len_4to8_64b and XXH3_len_9to16_64b, checked against XXH3_64bits in the unit tests.
//
// For the callers that hash many keys in a row (the Python client's batches). Only where
// available() says so: an x86-64 CPU with AVX-512 F and DQ (the core's avx512 check path).
#pragma once

#include <cstdint>

#include "bloom.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BLOOMFILTER_HASH_LANES 1
#endif

namespace bloomfilter {
namespace hash_lanes {

constexpr uint32_t kLanes = 8;

inline bool available() {
#ifdef BLOOMFILTER_HASH_LANES
    static const bool cpu = block_check_for(CheckPath::avx512) != nullptr;
    return cpu;
#else
    return false;
#endif
}

#ifdef BLOOMFILTER_HASH_LANES
// GCC 12 warns that its own AVX-512 intrinsics read an uninitialized value: their placeholder
// operand is declared `__m512i __Y = __Y;`.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace detail {

inline uint64_t secret_word(uint32_t offset) { return XXH_readLE64(XXH3_kSecret + offset); }

#define BLOOMFILTER_LANES_TARGET __attribute__((target("avx512f,avx512dq")))

BLOOMFILTER_LANES_TARGET inline __m512i xorshift(__m512i v, int shift) {
    return _mm512_xor_si512(v, _mm512_srli_epi64(v, shift));
}

// The bytes of each lane in reverse order (XXH_swap64), with AVX-512 F alone: the halves, then
// the 16-bit quarters of each half, then the bytes of each quarter swapped.
BLOOMFILTER_LANES_TARGET inline __m512i swap64(__m512i v) {
    const __m512i halves = _mm512_rol_epi32(_mm512_rol_epi64(v, 32), 16);
    const __m512i odd_bytes = _mm512_set1_epi64(int64_t(0x00FF00FF00FF00FFull));
    return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi64(halves, 8), odd_bytes),
                           _mm512_andnot_si512(odd_bytes, _mm512_slli_epi64(halves, 8)));
}

// XXH3_mul128_fold64: the low and high 64 bits of the 128-bit product, xor'ed. The high half
// from the four 32 x 32-bit products (AVX-512 has no 64 x 64 -> 128 multiply).
BLOOMFILTER_LANES_TARGET inline __m512i mul128_fold64(__m512i a, __m512i b) {
    const __m512i low32 = _mm512_set1_epi64(int64_t(0xFFFFFFFFull));
    const __m512i a_high = _mm512_srli_epi64(a, 32), b_high = _mm512_srli_epi64(b, 32);
    const __m512i ll = _mm512_mul_epu32(a, b), lh = _mm512_mul_epu32(a, b_high);
    const __m512i hl = _mm512_mul_epu32(a_high, b), hh = _mm512_mul_epu32(a_high, b_high);
    const __m512i cross =
        _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, low32)),
                         _mm512_and_si512(hl, low32));
    const __m512i high =
        _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                         _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(cross, 32)));
    return _mm512_xor_si512(_mm512_mullo_epi64(a, b), high);
}

}  // namespace detail

// out[i] = XXH3_64bits of the 8 bytes of words[i], little-endian (hash_bytes(2, ..., 8).low);
// out may be words.
BLOOMFILTER_LANES_TARGET inline void hash_words(const uint64_t words[kLanes],
                                                uint64_t out[kLanes]) {
    using namespace detail;
    const uint64_t bitflip = secret_word(8) ^ secret_word(16);
    const __m512i mx2 = _mm512_set1_epi64(int64_t(0x9FB21C651E98DF25ull));
    // XXH3_len_4to8_64b: its two 32-bit reads of 8 bytes are the word's halves, swapped.
    __m512i h = _mm512_xor_si512(_mm512_rol_epi64(_mm512_loadu_si512(words), 32),
                                 _mm512_set1_epi64(int64_t(bitflip)));
    // XXH3_rrmxmx(h, 8).
    h = _mm512_xor_si512(h, _mm512_xor_si512(_mm512_rol_epi64(h, 49), _mm512_rol_epi64(h, 24)));
    h = _mm512_mullo_epi64(h, mx2);
    h = _mm512_xor_si512(h, _mm512_add_epi64(_mm512_srli_epi64(h, 35), _mm512_set1_epi64(8)));
    h = _mm512_mullo_epi64(h, mx2);
    _mm512_storeu_si512(out, xorshift(h, 28));
}

// out[i] = XXH3_64bits of the 16 bytes of first[i] then second[i], each little-endian: the hash
// of a composite key whose part hashes they are (CompositeKey::hash() of two parts); out may be
// either input.
BLOOMFILTER_LANES_TARGET inline void hash_pairs(const uint64_t first[kLanes],
                                                const uint64_t second[kLanes],
                                                uint64_t out[kLanes]) {
    using namespace detail;
    const uint64_t bitflip1 = secret_word(24) ^ secret_word(32);
    const uint64_t bitflip2 = secret_word(40) ^ secret_word(48);
    // XXH3_len_9to16_64b of 16 bytes, then XXH3_avalanche.
    const __m512i low =
        _mm512_xor_si512(_mm512_loadu_si512(first), _mm512_set1_epi64(int64_t(bitflip1)));
    const __m512i high =
        _mm512_xor_si512(_mm512_loadu_si512(second), _mm512_set1_epi64(int64_t(bitflip2)));
    __m512i acc = _mm512_add_epi64(_mm512_add_epi64(_mm512_set1_epi64(16), swap64(low)),
                                   _mm512_add_epi64(high, mul128_fold64(low, high)));
    acc = _mm512_mullo_epi64(xorshift(acc, 37), _mm512_set1_epi64(int64_t(0x165667919E3779F9ull)));
    _mm512_storeu_si512(out, xorshift(acc, 32));
}

#undef BLOOMFILTER_LANES_TARGET
#pragma GCC diagnostic pop
#else
// Never called where available() is false.
inline void hash_words(const uint64_t *, uint64_t *) {}
inline void hash_pairs(const uint64_t *, const uint64_t *, uint64_t *) {}
#endif

}  // namespace hash_lanes
}  // namespace bloomfilter
