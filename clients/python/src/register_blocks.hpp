// The check of a batch of version 2 keys sorted by block, for a filter of 4096-bit blocks, on a
// CPU with AVX-512 (F and DQ): eight keys at a time, their bit positions computed in one
// register each (one multiply and shift for eight keys), each key's word picked by permutes
// from the block's 64 words, loaded into eight registers once for all the block's keys. The
// scalar check does a multiply, two shifts and a load per position and key; here the loads are
// a block's eight, whatever its keys. It answers as the core's scalar_block_contains(): the
// same positions (bit (h * M_i) >> 52 of the block) and the same words (bit b is bit b & 63 of
// little-endian word b >> 6).
//
// A filter of error rate about 0.008 or more has 4096-bit blocks (k <= 7); 0.01 is one.
// In a C++ loop over 100,000 hashes on the 1.2 MB filter of n = 1,000,000 (AMD EPYC, Zen 5),
// sort and check took 3.1 to 3.5 ns a key against 4.3 to 5.5 for the region sort and the
// unrolled scalar check, at 8.5 keys a block and more; at 4 keys a block it was slower (7.1
// against 6.4): a block's loads are then shared by too few keys.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bloom.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BLOOMFILTER_REGISTER_BLOCKS 1
#endif

namespace register_blocks {

namespace bf = bloomfilter;

constexpr uint32_t kBlockLog2 = 12;  // 64 words of 64 bits: eight 512-bit registers
// The fewest keys a block, on average over the batch, for which the check pays.
constexpr uint32_t kMinKeysPerBlock = 8;

// Whether this build and CPU have the check: where the core has its AVX-512 block check (the
// same instructions), asked once.
inline bool available() {
#ifdef BLOOMFILTER_REGISTER_BLOCKS
    static const bool cpu = bf::block_check_for(bf::CheckPath::avx512) != nullptr;
    return cpu;
#else
    return false;
#endif
}

#ifdef BLOOMFILTER_REGISTER_BLOCKS
// GCC 12 warns that its own AVX-512 intrinsics read an uninitialized value: their placeholder
// operand is declared `__m512i __Y = __Y;`.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// found[slots[i]] |= whether the filter at `data` (its encoded value, header included: blocks
// of 2^kBlockLog2 bits, `hashes` <= bf::kTabledMultipliers) holds the key of version 2 hash
// sorted[i]. The keys are sorted by block: block b's are [ends[b - 1], ends[b]), ends[-1] = 0.
// Only where available() says so.
__attribute__((target("avx512f,avx512dq"))) inline void check(const uint8_t *data, uint32_t blocks,
                                                              uint32_t hashes,
                                                              const uint64_t *sorted,
                                                              const uint32_t *slots,
                                                              const uint32_t *ends, bool *found) {
    const __m512i one = _mm512_set1_epi64(1), low6 = _mm512_set1_epi64(63);
    const __m512i bit4 = _mm512_set1_epi64(16), bit5 = _mm512_set1_epi64(32);
    uint32_t begin = 0;
    for (uint32_t b = 0; b < blocks; begin = ends[b], b++) {
        const uint32_t end = ends[b];
        if (begin == end) continue;
        const uint8_t *block = data + bf::block_offset(b, kBlockLog2);
        __m512i w[8];
        for (int q = 0; q < 8; q++) w[q] = _mm512_loadu_si512(block + 64 * q);
        for (size_t i = begin; i < end; i += 8) {  // size_t: no wrap near 2^32 keys
            const size_t left = end - i;
            // Lanes past the block's last key load nothing and answer nothing.
            const __mmask8 lanes = left >= 8 ? __mmask8(0xff) : __mmask8((1u << left) - 1);
            const __m512i h = _mm512_maskz_loadu_epi64(lanes, sorted + i);
            __m512i all = one;
            for (uint32_t n = 0; n < hashes; n++) {
                const __m512i bit = _mm512_srli_epi64(
                    _mm512_mullo_epi64(h, _mm512_set1_epi64(int64_t(bf::kMultipliers.m[n]))),
                    64 - kBlockLog2);
                const __m512i word = _mm512_srli_epi64(bit, 6);
                // A word's low 4 bits pick it from a pair of registers (16 words); bits 4 and 5
                // pick the pair.
                const __m512i w01 = _mm512_permutex2var_epi64(w[0], word, w[1]);
                const __m512i w23 = _mm512_permutex2var_epi64(w[2], word, w[3]);
                const __m512i w45 = _mm512_permutex2var_epi64(w[4], word, w[5]);
                const __m512i w67 = _mm512_permutex2var_epi64(w[6], word, w[7]);
                const __mmask8 odd_pair = _mm512_test_epi64_mask(word, bit4);
                const __mmask8 high_half = _mm512_test_epi64_mask(word, bit5);
                const __m512i picked =
                    _mm512_mask_blend_epi64(high_half, _mm512_mask_blend_epi64(odd_pair, w01, w23),
                                            _mm512_mask_blend_epi64(odd_pair, w45, w67));
                all = _mm512_and_si512(all, _mm512_srlv_epi64(picked, _mm512_and_si512(bit, low6)));
            }
            const uint32_t hit = _mm512_mask_test_epi64_mask(lanes, all, one);
            for (size_t l = 0; l < 8 && l < left; l++) found[slots[i + l]] |= (hit >> l) & 1;
        }
    }
}

#pragma GCC diagnostic pop
#else
inline void check(const uint8_t *, uint32_t, uint32_t, const uint64_t *, const uint32_t *,
                  const uint32_t *, bool *) {}
#endif

}  // namespace register_blocks
