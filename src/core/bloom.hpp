// The Bloom filter core: sizing, hashing, the portable byte format, its validation, and the
// add / contains / union operations. Plain C++17 with no PostgreSQL header, so it is unit-tested
// and fuzzed without a server. Nothing here throws, and nothing allocates but choose_check_path(),
// which frees its scratch before it returns: callers own every buffer.
//
// Layout: a blocked Bloom filter. The bits are split into blocks (512 bytes, 4096 bits, at the
// usual error rates); one key sets and checks its k bits inside a single block, so a point lookup
// reads one small slice of a stored value. The byte format is specified in docs/format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace bloomfilter {

// Two versions of the byte format share the header and the blocks; they differ in how a key's
// bytes become a block and bit positions (see below). New filters are written in version 2;
// version 1 filters stay readable and writable as they are.
constexpr uint32_t kFormatVersion1 = 1;
constexpr uint32_t kFormatVersion2 = 2;
constexpr uint32_t kFormatVersion = kFormatVersion2;
// Version 3 is a container: the layers of an index that grows, each a version 2 filter, in one
// value (docs/format.md, "Layered values"). A key is present when any layer says so.
constexpr uint32_t kFormatLayered = 3;
constexpr uint32_t kMaxLayers = 32;
constexpr uint32_t kLayerMaxHashes = 8;
constexpr uint32_t kMaxExpansion = 1024;
constexpr uint8_t kMagic[4] = {'B', 'L', 'O', 'M'};
constexpr size_t kHeaderBytes = 36;
// Block sizes are powers of two, from 4096 bits up; see block_log2_for().
constexpr uint32_t kMinBlockLog2 = 12;
constexpr uint32_t kMaxBlockLog2 = 24;

// Header field offsets inside the encoded value (all integers little-endian).
constexpr size_t kOffsetMagic = 0;       // 4 bytes "BLOM"
constexpr size_t kOffsetVersion = 4;     // u8
constexpr size_t kOffsetBlockLog2 = 5;   // u8, log2 of the bits per block
constexpr size_t kOffsetHashes = 6;      // u16
constexpr size_t kOffsetBlocks = 8;      // u32
constexpr size_t kOffsetCapacity = 12;   // u64
constexpr size_t kOffsetErrorRate = 20;  // IEEE-754 binary64
constexpr size_t kOffsetInserted = 28;   // u64
// A layered value's header: magic, version 3, a zero byte, then these; capacity (layer 0's),
// error_rate (the whole value's) and inserted at the offsets above.
constexpr size_t kOffsetLayerCount = 6;  // u16
constexpr size_t kOffsetExpansion = 8;   // u32

// The largest encoded value the core will build: PostgreSQL values are limited to 1 GB
// (MaxAllocSize, 0x3fffffff bytes) including their 4-byte length word.
constexpr uint64_t kMaxEncodedBytes = 0x3fffffffu - 4;
constexpr uint64_t kMaxBits = (kMaxEncodedBytes - kHeaderBytes) * 8;

enum class Status {
    ok,
    capacity_out_of_range,
    error_rate_out_of_range,
    too_large,
    // Malformed encodings.
    truncated,
    bad_magic,
    unsupported_version,
    bad_block_size,
    bad_parameters,
    inconsistent_sizing,
    bad_length,
    // Malformed layered values (version 3).
    bad_layer_count,
    bad_layer,
    // Union of filters whose parameters differ.
    capacity_mismatch,
    error_rate_mismatch,
    version_mismatch,
};

// A short English explanation of a status, for error messages.
const char *status_message(Status status);

// Parameters fixed when a filter is created.
struct Parameters {
    uint64_t capacity = 0;
    double error_rate = 0;
    uint32_t hashes = 0;
    uint32_t block_log2 = 0;
    uint32_t blocks = 0;
    uint32_t version = kFormatVersion;

    uint64_t block_bytes() const { return uint64_t(1) << (block_log2 - 3); }
    uint64_t bits() const { return uint64_t(blocks) << block_log2; }
    uint64_t encoded_bytes() const { return kHeaderBytes + uint64_t(blocks) * block_bytes(); }
};

// The article's formulas: m = ceil(-(n ln p) / (ln 2)^2), k = max(1, round((m / n) ln 2)).
// The blocked layout then rounds m up: see size_filter() in bloom.cpp for why and by how much.
uint64_t optimal_bits(uint64_t capacity, double error_rate);
uint32_t block_log2_for(uint32_t hashes, uint64_t bits);
Status size_filter(uint64_t capacity, double error_rate, Parameters *out);
// size_filter() with at most max_hashes hashes: past them, m is what that many hashes need for
// error_rate, (1 - e^(-k n / m))^k = p, padded as size_filter pads it. The blocks stay small
// (their size grows with k), at a few more bits a key than the optimum for very small rates. Such
// parameters are the layers' of an index that grows, never a bloom value's.
Status size_filter_capped(uint64_t capacity, double error_rate, uint32_t max_hashes,
                          Parameters *out);

// The error rate of layer n of a layered index or value: error_rate x (1/4) x (3/4)^n. The rates
// of all the layers add up to less than error_rate, and each layer costs only a few bits a key
// more than the one before (a ratio of 1/2 makes the layers of a large index 3 to 4 times the
// bits a key of a fixed filter; "Scalable Bloom Filters", Almeida et al., advise 0.8 to 0.9 for
// an expansion of 2).
double layer_error_rate(double error_rate, uint32_t n);

// Layer n of a layered index or value: `expansion`^n times the first layer's capacity, at
// layer_error_rate(error_rate, n); past layer 0 with at most kLayerMaxHashes hashes
// (size_filter_capped). Not ok when no such filter can be made (past the largest size).
Status layer_parameters(uint64_t capacity, double error_rate, uint32_t expansion, uint32_t n,
                        Parameters *out);

// A key's hash as a filter of a given format version uses it.
// - Version 1: the 128-bit XXH3 hash. The high half picks the block, the low half and the
//   rotated high half drive double hashing inside it.
// - Version 2: the 64-bit XXH3 hash, in `low` (`high` is 0). It picks the block and, multiplied
//   by one constant per position, the bits inside it.
struct KeyHash {
    uint64_t low;
    uint64_t high;
};

inline KeyHash hash_bytes(uint32_t version, const void *data, size_t length) {
    if (version == kFormatVersion1) {
        XXH128_hash_t h = XXH3_128bits(data, length);
        return KeyHash{h.low64, h.high64};
    }
    return KeyHash{XXH3_64bits(data, length), 0};
}

// An independent 64-bit hash for choosing a shard: a different seed, so the shard number tells
// nothing about the block or bit positions and each shard keeps its false-positive rate.
constexpr uint64_t kShardSeed = 0x5348415244u;  // "SHARD"
inline uint32_t shard_of(const void *data, size_t length, uint32_t shards) {
    uint64_t h = XXH3_64bits_withSeed(data, length, kShardSeed);
    return uint32_t((static_cast<unsigned __int128>(h) * shards) >> 64);
}

// Little-endian loads and stores, independent of host byte order and alignment.
inline uint64_t load_u64(const uint8_t *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
inline void store_u64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    std::memcpy(p, &v, 8);
}
inline uint32_t load_u32(const uint8_t *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline void store_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t load_u16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
inline void store_u16(uint8_t *p, uint16_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}

// A composite key: the values of a multicolumn index's key columns, in column order, or of
// bloom_hash(a, b, ...). Each value is hashed alone as a key of its type (hash_bytes, version 2);
// the key's hash is XXH3-64 of those hashes, 8 bytes little-endian each. Fixed-width parts make
// the encoding unambiguous without a length or separator: ('ab', 'c') and ('a', 'bc') hash
// different part hashes, and lists of other lengths hash inputs of other lengths. A key of one
// part is that part's hash, so a one-column index places its keys as before.
constexpr uint32_t kMaxKeyParts = 8;
struct CompositeKey {
    uint8_t bytes[8 * kMaxKeyParts];
    uint32_t count = 0;
    // Adds the next part's version 2 hash; false when the key has kMaxKeyParts parts already.
    bool add(uint64_t part_hash) {
        if (count == kMaxKeyParts) return false;
        store_u64(bytes + 8 * count, part_hash);
        count++;
        return true;
    }
    // The key's version 2 hash (of at least one part).
    KeyHash hash() const {
        if (count == 1) return KeyHash{load_u64(bytes), 0};
        return KeyHash{XXH3_64bits(bytes, 8 * size_t(count)), 0};
    }
};

// Which block a key lives in: a multiply-shift range reduction of the version's block hash.
inline uint64_t block_hash(KeyHash h, uint32_t version) {
    return version == kFormatVersion1 ? h.high : h.low;
}
inline uint32_t block_index(uint64_t block_hash, uint32_t blocks) {
    return uint32_t((static_cast<unsigned __int128>(block_hash) * blocks) >> 64);
}

inline uint64_t block_offset(uint32_t block, uint32_t block_log2) {
    return kHeaderBytes + (uint64_t(block) << (block_log2 - 3));
}

// Where a key's block begins in the encoded value: the one place that decides it, for checks of
// whole values, of slices read from storage, and of index pages.
inline uint64_t key_block_offset(KeyHash h, uint32_t version, uint32_t blocks,
                                 uint32_t block_log2) {
    return block_offset(block_index(block_hash(h, version), blocks), block_log2);
}
inline uint64_t key_block_offset(KeyHash h, const Parameters &p) {
    return key_block_offset(h, p.version, p.blocks, p.block_log2);
}

constexpr uint64_t finalize64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Version 1 bit positions: the article's double hashing, g_i = h1 + i * h2 (mod 2^64), with h1 the
// low half and h2 the high half rotated (its low bits, which the block choice does not use).
// Each g_i goes through SplitMix64's finalizer before its top block_log2 bits are taken: without
// it the k positions of a key are correlated inside a small block and the measured rate runs a
// few percent above the blocked filter's expectation.
inline uint64_t position_step(KeyHash h) { return ((h.high << 32) | (h.high >> 32)) | 1; }

// Version 2 bit positions: bit i is the top block_log2 bits of h * M_i (mod 2^64), with
// M_i = finalize64((i + 1) * 0x9e3779b97f4a7c15) | 1. The product's top bits depend on every bit
// of h, so they are independent of the block choice (the top bits of h), and the M_i are
// unrelated odd constants, so the k positions are not an arithmetic sequence. One multiply per
// position where version 1 takes two plus a 128-bit hash: 20.6 against 23.5 ns per check
// through the scalar loop on the article's 1.2 MB filter (bench/core_bench.cpp).
constexpr uint64_t position_multiplier_formula(uint32_t i) {
    return finalize64(uint64_t(i + 1) * 0x9e3779b97f4a7c15ull) | 1;
}
constexpr uint32_t kTabledMultipliers = 32;
struct MultiplierTable {
    uint64_t m[kTabledMultipliers];
};
constexpr MultiplierTable make_multipliers() {
    MultiplierTable t{};
    for (uint32_t i = 0; i < kTabledMultipliers; i++) t.m[i] = position_multiplier_formula(i);
    return t;
}
constexpr MultiplierTable kMultipliers = make_multipliers();
inline uint64_t position_multiplier(uint32_t i) {
    return i < kTabledMultipliers ? kMultipliers.m[i] : position_multiplier_formula(i);
}

// Calls at(bit) for each of the key's k bit positions inside its block.
template <typename At>
inline void for_each_position(KeyHash h, uint32_t version, uint32_t hashes, uint32_t block_log2,
                              At &&at) {
    const uint32_t shift = 64 - block_log2;
    if (version == kFormatVersion1) {
        uint64_t g = h.low, step = position_step(h);
        for (uint32_t i = 0; i < hashes; i++, g += step) at(uint32_t(finalize64(g) >> shift));
    } else {
        for (uint32_t i = 0; i < hashes; i++)
            at(uint32_t((h.low * position_multiplier(i)) >> shift));
    }
}

inline void block_add(uint8_t *block, KeyHash h, uint32_t version, uint32_t hashes,
                      uint32_t block_log2) {
    for_each_position(h, version, hashes, block_log2,
                      [block](uint32_t bit) { block[bit >> 3] |= uint8_t(1u << (bit & 7)); });
}

// Reads all k bits and combines them without a branch. Stopping at the first zero bit reads
// fewer, but which bit is zero is a coin toss for an absent key, and the mispredicted exit costs
// more than the loads it saves, in cache or not: on an Intel Xeon, 20.7 against 15.0 ns per check
// on the 1.2 MB filter and 37.7 against 33.4 on a 9.6 MB one (version 2, bench/core_bench.cpp's
// keys).
// Bit b of a block is bit (b & 63) of its little-endian 64-bit word b >> 6, which is bit (b & 7)
// of byte b >> 3: whole-word loads read the same bits as byte loads, with fewer instructions.
inline bool scalar_block_contains(const uint8_t *block, KeyHash h, uint32_t version,
                                  uint32_t hashes, uint32_t block_log2) {
    uint64_t all_set = 1;
    for_each_position(h, version, hashes, block_log2, [block, &all_set](uint32_t bit) {
        all_set &= load_u64(block + 8 * (bit >> 6)) >> (bit & 63);
    });
    return (all_set & 1) != 0;
}

// The check of a version 2 block that stops at the first bit not set. For a block that has to
// come from memory rather than a cache, such as an index page read once per query, an absent
// key's check then waits for one or two of the block's cache lines instead of all k.
inline bool block_contains_stopping(const uint8_t *block, KeyHash h, uint32_t hashes,
                                    uint32_t block_log2) {
    const uint32_t shift = 64 - block_log2;
    for (uint32_t i = 0; i < hashes; i++) {
        const uint32_t bit = uint32_t((h.low * position_multiplier(i)) >> shift);
        if (((block[bit >> 3] >> (bit & 7)) & 1) == 0) return false;
    }
    return true;
}

// Ways of checking a version 2 block of up to 8 hashes, each a function of the block, the key's
// hash, the number of hashes and the block size. All give scalar_block_contains()'s answer
// (unit-tested on each the machine has):
// - scalar: the loop above unrolled for each number of hashes, in portable C++;
// - avx2: the k products, shifts and word loads in 256-bit registers (two gathers for k > 4);
// - avx512: the same in one 512-bit register and one gather.
// Which is fastest depends on the CPU, not only on what it supports: AVX2 gathers are slow on
// some (an AMD EPYC without AVX-512 checked slower through AVX2 than through the scalar loop).
// choose_check_path() times the ones the CPU has and keeps the fastest; until it runs, the
// scalar path is used.
enum class CheckPath { scalar, avx2, avx512 };
constexpr uint32_t kCheckPaths = 3;
constexpr uint32_t kPathMaxHashes = 8;
using BlockCheck = bool (*)(const uint8_t *block, uint64_t h, uint32_t hashes, uint32_t block_log2);

// The implementation of a path, or null when this build or CPU lacks it (scalar: never null).
BlockCheck block_check_for(CheckPath path);
// "scalar", "avx2" or "avx512".
const char *check_path_name(CheckPath path);

// What choose_check_path() measured: each path's time per check relative to the scalar path's
// (the median over rounds of the ratio of adjacent timings; 0 for a path the CPU lacks), and
// which it chose.
struct CheckCalibration {
    CheckPath chosen = CheckPath::scalar;
    double relative_time[kCheckPaths] = {1, 0, 0};
    uint32_t rounds = 0;
    double microseconds = 0;  // the whole calibration's wall-clock time
};
// Times every path the CPU has on a synthetic 256 kB filter (about 1 ms in all) and makes the
// fastest the one FilterRef and block_contains() use; a vector path only when it beats the
// scalar one by 3% or more, so timing noise never trades the scalar path for a slower one. Call
// it once, before other threads check filters: the PostgreSQL module calls it from _PG_init.
CheckCalibration choose_check_path();
// Makes `path` the one used, if this CPU has it (true), for benchmarks and tests.
bool set_check_path(CheckPath path);
CheckPath chosen_check_path();
inline const char *chosen_check_path_name() { return check_path_name(chosen_check_path()); }
extern BlockCheck chosen_block_check;

// The block check for filters of this version and number of hashes, or null (the loop above).
inline BlockCheck block_check(uint32_t version, uint32_t hashes) {
    return version == kFormatVersion2 && hashes <= kPathMaxHashes ? chosen_block_check : nullptr;
}

inline bool block_contains(const uint8_t *block, KeyHash h, uint32_t version, uint32_t hashes,
                           uint32_t block_log2) {
    if (BlockCheck check = block_check(version, hashes))
        return check(block, h.low, hashes, block_log2);
    return scalar_block_contains(block, h, version, hashes, block_log2);
}

// The decoded header of an encoded filter.
struct Header {
    Parameters parameters;
    uint64_t inserted = 0;
};

// Reads and checks the header from the first `available` bytes of an encoded value whose full
// length is `total_length`: magic, version (1 or 2), parameter ranges, that hashes and block sizes
// are what size_filter() gives for capacity and error_rate, and that total_length matches. Used by
// every way in, and alone by the slice path, which never reads the whole value.
Status read_header(const uint8_t *data, size_t available, uint64_t total_length, Header *out);

// The layers of a layered value (format version 3): the parameters of the whole and of each
// layer, and where each layer's own header begins.
struct Layers {
    uint64_t capacity = 0;  // layer 0's
    double error_rate = 0;  // the whole value's
    uint32_t expansion = 0;
    uint32_t count = 0;
    uint64_t inserted = 0;
    uint64_t encoded_bytes = 0;
    Parameters layer[kMaxLayers];
    uint64_t offset[kMaxLayers] = {};
};
// The layout of a layered value of `count` layers (bad_layer_count, bad_parameters or too_large
// when there is none).
Status size_layers(uint64_t capacity, double error_rate, uint32_t expansion, uint32_t count,
                   Layers *out);
// Checks a whole layered value: its header, each layer's header (the one its number gives;
// any `inserted`) and its length.
Status read_layers(const uint8_t *data, size_t length, Layers *out);
// Writes a layered value's own header (`inserted` 0).
void write_layered_header(const Layers &layers, uint8_t *out);
// Writes the value's header and each layer's (`inserted` 0); the caller fills the layers' bits.
void write_layered_headers(const Layers &layers, uint8_t *out);

// Full validation of an encoded value, of any version. The block bits need no check: every bit
// pattern is a valid filter. A layered value's header gets version 3, its capacity and
// error_rate, and no blocks: read_layers() describes it.
Status validate(const uint8_t *data, size_t length, Header *out);

// Writes an empty filter (header and zeroed blocks) into out, which holds encoded_bytes().
void write_empty(const Parameters &parameters, uint8_t *out);
// Writes only the header of an empty filter; the caller zeroes the blocks (in chunks, say).
void write_header(const Parameters &parameters, uint8_t *out);

// Operations on a validated encoding held in memory.
struct FilterRef {
    uint8_t *data;
    uint32_t hashes;
    uint32_t block_log2;
    uint32_t blocks;
    uint32_t version;
    BlockCheck check;  // chosen once per filter, not per check; null: scalar_block_contains()

    static FilterRef of(uint8_t *data, const Parameters &p) {
        return FilterRef{data,     p.hashes,  p.block_log2,
                         p.blocks, p.version, block_check(p.version, p.hashes)};
    }
    KeyHash hash(const void *key, size_t length) const { return hash_bytes(version, key, length); }
    uint8_t *block_of(KeyHash h) const {
        return data + key_block_offset(h, version, blocks, block_log2);
    }
    // h must be this filter's version's hash of the key (hash()).
    void add(KeyHash h) const { block_add(block_of(h), h, version, hashes, block_log2); }
    __attribute__((always_inline)) bool contains(KeyHash h) const {
        const uint8_t *block = block_of(h);
        if (check != nullptr) return check(block, h.low, hashes, block_log2);
        return scalar_block_contains(block, h, version, hashes, block_log2);
    }
};

// Whether any layer of a validated layered value holds the key (hash_bytes(2, ...)).
inline bool layers_contain(const uint8_t *data, const Layers &layers, KeyHash h) {
    for (uint32_t n = layers.count; n-- > 0;) {
        FilterRef ref =
            FilterRef::of(const_cast<uint8_t *>(data) + layers.offset[n], layers.layer[n]);
        if (ref.contains(h)) return true;
    }
    return false;
}

uint64_t read_inserted(const uint8_t *data);
void write_inserted(uint8_t *data, uint64_t inserted);
// Adds to the inserted counter, saturating instead of wrapping.
void add_inserted(uint8_t *data, uint64_t count);

// Checks that two headers can be unioned (same version, capacity and error rate); on mismatch
// says which differs.
Status check_compatible(const Header &a, const Header &b);
// Sets bytes [begin, end) of the bit area of dst to those of a OR b (all three validated and
// compatible; dst may be a), so callers can check for cancel between chunks. union_inserted()
// sums the counters into dst.
void union_bits(uint8_t *dst, const uint8_t *a, const uint8_t *b, uint64_t begin, uint64_t end);
void union_inserted(uint8_t *dst, const uint8_t *src);

struct Statistics {
    uint64_t bits_set = 0;
    double fill = 0;
    double estimated_count = 0;
    double estimated_error_rate = 0;
};
Statistics statistics(const uint8_t *data, const Header &header);

// statistics() of a filter's bits given a slice at a time, in order (an index's filter read page
// by page): the same numbers, bit for bit, whatever the slices' sizes, without the whole in
// memory. result() once every block has been added.
class StatisticsSum {
public:
    explicit StatisticsSum(const Parameters &parameters) : p_(parameters) {}
    // The next `length` bytes of the bits.
    void add(const uint8_t *bits, uint64_t length);
    // The next `length` bytes, all zero (a page never written).
    void add_zeros(uint64_t length);
    Statistics result() const;

private:
    void end_block();
    Parameters p_;
    uint64_t block_added_ = 0;  // bytes of the current block added so far
    uint64_t block_set_ = 0;
    uint64_t bits_set_ = 0;
    double error_sum_ = 0;
    double count_sum_ = 0;
};

// The text form of a filter is "\x" followed by the encoding in lower-case hex, as bytea prints.
constexpr size_t text_length(size_t encoded_length) { return 2 + 2 * encoded_length; }
void encode_hex(const uint8_t *data, size_t length, char *out);  // writes text_length() chars
// Decodes the hex digits after "\x" into out (which holds (length - 2) / 2 bytes); false on a
// missing prefix, an odd count or a non-hex character.
bool decode_hex(const char *text, size_t length, uint8_t *out);

}  // namespace bloomfilter
