// Sizing, header encoding and validation, union and statistics for the blocked Bloom filter.
#include "bloom.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace bloomfilter {

const char *status_message(Status status) {
    switch (status) {
        case Status::ok: return "ok";
        case Status::capacity_out_of_range: return "capacity must be at least 1";
        case Status::error_rate_out_of_range:
            return "error_rate must be greater than 0 and less than 1";
        case Status::too_large:
            return "the filter would exceed the 1 GB limit of a PostgreSQL value";
        case Status::truncated: return "the value is shorter than a bloom header";
        case Status::bad_magic: return "the value does not start with the bloom magic \"BLOM\"";
        case Status::unsupported_version: return "unsupported bloom format version";
        case Status::bad_block_size: return "the block size in the header is out of range";
        case Status::bad_parameters: return "capacity or error_rate in the header is out of range";
        case Status::inconsistent_sizing:
            return "hashes or blocks in the header do not match capacity and error_rate";
        case Status::bad_length: return "the value's length does not match its number of blocks";
        case Status::bad_layer_count:
            return "the layer count or expansion in the layered header is out of range";
        case Status::bad_layer:
            return "a layer's header does not match its place in the layered value";
        case Status::capacity_mismatch: return "the filters have different capacity";
        case Status::error_rate_mismatch: return "the filters have different error_rate";
        case Status::version_mismatch: return "the filters have different format versions";
    }
    return "unknown status";
}

uint64_t optimal_bits(uint64_t capacity, double error_rate) {
    const double ln2 = std::log(2.0);
    double m = std::ceil(-(double(capacity) * std::log(error_rate)) / (ln2 * ln2));
    if (!(m <= double(kMaxBits))) return std::numeric_limits<uint64_t>::max();
    return m < 1 ? 1 : uint64_t(m);
}

// Keys are spread over blocks unevenly, and a fuller block answers "maybe" more often. The cost
// grows about as k^3 / block size: 4096-bit blocks cost ~2.7% of the rate at k = 7, so blocks grow
// as (k / 7)^3 beyond that. A filter that fits one block uses the smallest power of two holding m.
uint32_t block_log2_for(uint32_t hashes, uint64_t bits) {
    double wanted = 4096.0 * std::pow(double(hashes) / 7.0, 3.0);
    uint32_t log2 = kMinBlockLog2;
    while (log2 < kMaxBlockLog2 && double(uint64_t(1) << log2) < wanted &&
           (uint64_t(1) << log2) < bits)
        log2++;
    return log2;
}

// m is rounded up by 0.5% before it is cut into blocks: that buys back the blocked layout's
// cost, so the measured rate stays within 1.05 x error_rate. Filters of at least 200 blocks end
// up less than 1% above the article's m; smaller ones are rounded up to whole blocks.
Status size_filter(uint64_t capacity, double error_rate, Parameters *out) {
    if (capacity < 1) return Status::capacity_out_of_range;
    if (!(error_rate > 0.0 && error_rate < 1.0)) return Status::error_rate_out_of_range;
    uint64_t bits = optimal_bits(capacity, error_rate);
    if (bits > kMaxBits) return Status::too_large;
    double k = std::round(double(bits) / double(capacity) * std::log(2.0));
    if (k < 1) {
        // Above p of about 0.6 the formula's k rounds to 0; with the one hash used instead, the
        // rate is 1 - e^(-n/m), so m must be at least -n / ln(1 - p) to stay within p.
        k = 1;
        double one_hash_bits = std::ceil(-double(capacity) / std::log1p(-error_rate));
        if (!(one_hash_bits <= double(kMaxBits))) return Status::too_large;
        bits = std::max(bits, uint64_t(one_hash_bits));
    }
    uint32_t log2 = block_log2_for(uint32_t(k), bits);
    double padded = std::ceil(double(bits) * 1.005);
    uint64_t blocks = (uint64_t(padded) + (uint64_t(1) << log2) - 1) >> log2;
    if (kHeaderBytes + (blocks << (log2 - 3)) > kMaxEncodedBytes) return Status::too_large;
    out->capacity = capacity;
    out->error_rate = error_rate;
    out->hashes = uint32_t(k);
    out->block_log2 = log2;
    out->blocks = uint32_t(blocks);
    return Status::ok;
}

Status size_filter_capped(uint64_t capacity, double error_rate, uint32_t max_hashes,
                          Parameters *out) {
    const Status status = size_filter(capacity, error_rate, out);
    if (status != Status::ok || out->hashes <= max_hashes) return status;
    const double k = double(max_hashes);
    const double bits =
        std::ceil(-k * double(capacity) / std::log1p(-std::pow(error_rate, 1.0 / k)));
    if (!(bits <= double(kMaxBits))) return Status::too_large;
    const uint32_t log2 = block_log2_for(max_hashes, uint64_t(bits));
    const double padded = std::ceil(bits * 1.005);
    const uint64_t blocks = (uint64_t(padded) + (uint64_t(1) << log2) - 1) >> log2;
    if (kHeaderBytes + (blocks << (log2 - 3)) > kMaxEncodedBytes) return Status::too_large;
    out->hashes = max_hashes;
    out->block_log2 = log2;
    out->blocks = uint32_t(blocks);
    return Status::ok;
}

double layer_error_rate(double error_rate, uint32_t n) {
    // 3^n exactly (n < 34 keeps it under 2^53), then one rounded product and an exact scaling:
    // the Python and Node clients compute the same double.
    double three_to_n = 1;
    for (uint32_t i = 0; i < n; i++) three_to_n *= 3;
    return std::ldexp(error_rate * three_to_n, -2 * int(n + 1));
}

Status layer_parameters(uint64_t capacity, double error_rate, uint32_t expansion, uint32_t n,
                        Parameters *out) {
    double layer_capacity = double(capacity);
    for (uint32_t i = 0; i < n; i++) layer_capacity *= expansion;
    if (layer_capacity > double(std::numeric_limits<int64_t>::max())) return Status::too_large;
    // Past layer 0 (a bloom value when it is the only one), at most 8 hashes: 1 kB blocks, 7 to
    // a page, where the optimal k of the smaller rates would make blocks of 4 kB, one to a page,
    // and then blocks larger than a page.
    const double rate = layer_error_rate(error_rate, n);
    const Status status =
        n == 0 ? size_filter(uint64_t(layer_capacity), rate, out)
               : size_filter_capped(uint64_t(layer_capacity), rate, kLayerMaxHashes, out);
    out->version = kFormatVersion2;
    return status;
}

static double load_double(const uint8_t *p) {
    uint64_t raw = load_u64(p);
    double d;
    std::memcpy(&d, &raw, 8);
    return d;
}

static void store_double(uint8_t *p, double d) {
    uint64_t raw;
    std::memcpy(&raw, &d, 8);
    store_u64(p, raw);
}

Status read_header(const uint8_t *data, size_t available, uint64_t total_length, Header *out) {
    if (available < kHeaderBytes || total_length < kHeaderBytes) return Status::truncated;
    if (std::memcmp(data + kOffsetMagic, kMagic, sizeof kMagic) != 0) return Status::bad_magic;
    const uint8_t version = data[kOffsetVersion];
    if (version != kFormatVersion1 && version != kFormatVersion2)
        return Status::unsupported_version;
    uint64_t capacity = load_u64(data + kOffsetCapacity);
    double error_rate = load_double(data + kOffsetErrorRate);
    Parameters expected;
    Status sized = size_filter(capacity, error_rate, &expected);
    if (sized == Status::capacity_out_of_range || sized == Status::error_rate_out_of_range)
        return Status::bad_parameters;
    if (sized != Status::ok) return sized;
    if (data[kOffsetBlockLog2] < kMinBlockLog2 || data[kOffsetBlockLog2] > kMaxBlockLog2)
        return Status::bad_block_size;
    if (load_u16(data + kOffsetHashes) != expected.hashes ||
        data[kOffsetBlockLog2] != expected.block_log2 ||
        load_u32(data + kOffsetBlocks) != expected.blocks)
        return Status::inconsistent_sizing;
    if (total_length != expected.encoded_bytes()) return Status::bad_length;
    expected.version = version;
    out->parameters = expected;
    out->inserted = load_u64(data + kOffsetInserted);
    return Status::ok;
}

Status size_layers(uint64_t capacity, double error_rate, uint32_t expansion, uint32_t count,
                   Layers *out) {
    if (count < 1 || count > kMaxLayers || expansion < 2 || expansion > kMaxExpansion)
        return Status::bad_layer_count;
    if (capacity < 1 || !(error_rate > 0.0 && error_rate < 1.0)) return Status::bad_parameters;
    out->capacity = capacity;
    out->error_rate = error_rate;
    out->expansion = expansion;
    out->count = count;
    uint64_t offset = kHeaderBytes;
    for (uint32_t n = 0; n < count; n++) {
        const Status status = layer_parameters(capacity, error_rate, expansion, n, &out->layer[n]);
        if (status == Status::capacity_out_of_range || status == Status::error_rate_out_of_range)
            return Status::bad_parameters;
        if (status != Status::ok) return status;
        out->offset[n] = offset;
        offset += out->layer[n].encoded_bytes();
        if (offset > kMaxEncodedBytes) return Status::too_large;
    }
    out->encoded_bytes = offset;
    return Status::ok;
}

Status read_layers(const uint8_t *data, size_t length, Layers *out) {
    if (length < kHeaderBytes) return Status::truncated;
    if (std::memcmp(data + kOffsetMagic, kMagic, sizeof kMagic) != 0) return Status::bad_magic;
    if (data[kOffsetVersion] != kFormatLayered || data[kOffsetVersion + 1] != 0)
        return Status::unsupported_version;
    const Status sized =
        size_layers(load_u64(data + kOffsetCapacity), load_double(data + kOffsetErrorRate),
                    load_u32(data + kOffsetExpansion), load_u16(data + kOffsetLayerCount), out);
    if (sized != Status::ok) return sized;
    out->inserted = load_u64(data + kOffsetInserted);
    // Each layer's header before the length, so that a layer count that says more than the
    // value holds is reported as such when the value is long enough to show it.
    for (uint32_t n = 0; n < out->count; n++) {
        if (out->offset[n] + kHeaderBytes > length) return Status::bad_length;
        uint8_t expected[kHeaderBytes];
        write_header(out->layer[n], expected);
        if (std::memcmp(expected, data + out->offset[n], kOffsetInserted) != 0)
            return Status::bad_layer;
    }
    if (length != out->encoded_bytes) return Status::bad_length;
    return Status::ok;
}

void write_layered_header(const Layers &layers, uint8_t *out) {
    std::memset(out, 0, kHeaderBytes);
    std::memcpy(out + kOffsetMagic, kMagic, sizeof kMagic);
    out[kOffsetVersion] = uint8_t(kFormatLayered);
    store_u16(out + kOffsetLayerCount, uint16_t(layers.count));
    store_u32(out + kOffsetExpansion, layers.expansion);
    store_u64(out + kOffsetCapacity, layers.capacity);
    store_double(out + kOffsetErrorRate, layers.error_rate);
}

void write_layered_headers(const Layers &layers, uint8_t *out) {
    write_layered_header(layers, out);
    for (uint32_t n = 0; n < layers.count; n++)
        write_header(layers.layer[n], out + layers.offset[n]);
}

Status validate(const uint8_t *data, size_t length, Header *out) {
    if (length >= kHeaderBytes && std::memcmp(data + kOffsetMagic, kMagic, sizeof kMagic) == 0 &&
        data[kOffsetVersion] == kFormatLayered) {
        Layers layers;
        const Status status = read_layers(data, length, &layers);
        if (status != Status::ok) return status;
        out->parameters = Parameters{};
        out->parameters.capacity = layers.capacity;
        out->parameters.error_rate = layers.error_rate;
        out->parameters.version = kFormatLayered;
        out->inserted = layers.inserted;
        return Status::ok;
    }
    return read_header(data, length, length, out);
}

void write_empty(const Parameters &parameters, uint8_t *out) {
    std::memset(out + kHeaderBytes, 0, parameters.encoded_bytes() - kHeaderBytes);
    write_header(parameters, out);
}

void write_header(const Parameters &parameters, uint8_t *out) {
    std::memset(out, 0, kHeaderBytes);
    std::memcpy(out + kOffsetMagic, kMagic, sizeof kMagic);
    out[kOffsetVersion] = uint8_t(parameters.version);
    out[kOffsetBlockLog2] = uint8_t(parameters.block_log2);
    store_u16(out + kOffsetHashes, uint16_t(parameters.hashes));
    store_u32(out + kOffsetBlocks, parameters.blocks);
    store_u64(out + kOffsetCapacity, parameters.capacity);
    store_double(out + kOffsetErrorRate, parameters.error_rate);
    store_u64(out + kOffsetInserted, 0);
}

uint64_t read_inserted(const uint8_t *data) { return load_u64(data + kOffsetInserted); }
void write_inserted(uint8_t *data, uint64_t inserted) {
    store_u64(data + kOffsetInserted, inserted);
}

void add_inserted(uint8_t *data, uint64_t count) {
    uint64_t now = read_inserted(data);
    uint64_t sum = now + count;
    write_inserted(data, sum < now ? std::numeric_limits<uint64_t>::max() : sum);
}

Status check_compatible(const Header &a, const Header &b) {
    if (a.parameters.version != b.parameters.version) return Status::version_mismatch;
    if (a.parameters.capacity != b.parameters.capacity) return Status::capacity_mismatch;
    // Compare bit patterns: the same double written by two programs must be bit-identical.
    uint64_t ra, rb;
    std::memcpy(&ra, &a.parameters.error_rate, 8);
    std::memcpy(&rb, &b.parameters.error_rate, 8);
    if (ra != rb) return Status::error_rate_mismatch;
    return Status::ok;
}

void union_bits(uint8_t *dst, const uint8_t *a, const uint8_t *b, uint64_t begin, uint64_t end) {
    uint8_t *d = dst + kHeaderBytes;
    const uint8_t *x = a + kHeaderBytes, *y = b + kHeaderBytes;
    for (uint64_t i = begin; i < end; i++) d[i] = uint8_t(x[i] | y[i]);
}

void union_inserted(uint8_t *dst, const uint8_t *src) { add_inserted(dst, read_inserted(src)); }

Statistics statistics(const uint8_t *data, const Header &header) {
    StatisticsSum sum(header.parameters);
    sum.add(data + kHeaderBytes, header.parameters.bits() / 8);
    return sum.result();
}

namespace {

uint64_t count_set_bits(const uint8_t *bytes, uint64_t length) {
    uint64_t set = 0, i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        std::memcpy(&word, bytes + i, 8);
        set += uint64_t(__builtin_popcountll(word));
    }
    for (; i < length; i++) set += uint64_t(__builtin_popcount(bytes[i]));
    return set;
}

}  // namespace

void StatisticsSum::add(const uint8_t *bits, uint64_t length) {
    const uint64_t block_bytes = p_.block_bytes();
    while (length > 0) {
        const uint64_t n = std::min(length, block_bytes - block_added_);
        block_set_ += count_set_bits(bits, n);
        block_added_ += n;
        bits += n;
        length -= n;
        if (block_added_ == block_bytes) end_block();
    }
}

void StatisticsSum::add_zeros(uint64_t length) {
    const uint64_t block_bytes = p_.block_bytes();
    while (length > 0) {
        const uint64_t n = std::min(length, block_bytes - block_added_);
        block_added_ += n;
        length -= n;
        if (block_added_ == block_bytes) end_block();
    }
}

void StatisticsSum::end_block() {
    const double k = p_.hashes, block_bits = double(uint64_t(1) << p_.block_log2);
    bits_set_ += block_set_;
    const double fill = double(block_set_) / block_bits;
    // A key absent from the filter is a false positive when all k of its bits, all in one
    // block, are set: the exact expectation for a blocked filter is the mean of fill^k.
    error_sum_ += std::pow(fill, k);
    count_sum_ += block_set_ == uint64_t(block_bits) ? std::numeric_limits<double>::infinity()
                                                     : -(block_bits / k) * std::log1p(-fill);
    block_added_ = 0;
    block_set_ = 0;
}

Statistics StatisticsSum::result() const {
    Statistics stats;
    stats.bits_set = bits_set_;
    stats.fill = double(bits_set_) / double(p_.bits());
    stats.estimated_error_rate = error_sum_ / p_.blocks;
    stats.estimated_count = count_sum_;
    return stats;
}

void encode_hex(const uint8_t *data, size_t length, char *out) {
    static const char digits[] = "0123456789abcdef";
    *out++ = '\\';
    *out++ = 'x';
    for (size_t i = 0; i < length; i++) {
        *out++ = digits[data[i] >> 4];
        *out++ = digits[data[i] & 15];
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool decode_hex(const char *text, size_t length, uint8_t *out) {
    if (length < 2 || text[0] != '\\' || text[1] != 'x' || (length - 2) % 2 != 0) return false;
    for (size_t i = 2; i < length; i += 2) {
        int high = hex_value(text[i]), low = hex_value(text[i + 1]);
        if (high < 0 || low < 0) return false;
        *out++ = uint8_t(high << 4 | low);
    }
    return true;
}

// The ways of checking a version 2 block (see bloom.hpp). Lane or step i tests position i: the
// top block_log2 bits of h * M_i, read as bit (bit & 63) of the little-endian 64-bit word
// (bit >> 6) of the block, which is bit (bit & 7) of byte (bit >> 3).
namespace {

// The loop unrolled for a known number of hashes: no loop counter, the multipliers as
// immediates, the bits combined in a tree rather than a chain. 14 against 16 ns per check
// through the byte-at-a-time loop this replaced (bench/core_bench.cpp's filter, on an Intel Xeon).
template <uint32_t Hashes>
inline bool scalar_block_check_of(const uint8_t *block, uint64_t h, uint32_t block_log2) {
    const uint32_t shift = 64 - block_log2;
    uint64_t tested[kPathMaxHashes];
#pragma GCC unroll 8
    for (uint32_t i = 0; i < kPathMaxHashes; i++) {
        if (i < Hashes) {
            const uint64_t bit = (h * kMultipliers.m[i]) >> shift;
            tested[i] = load_u64(block + 8 * (bit >> 6)) >> (bit & 63);
        } else {
            tested[i] = 1;
        }
    }
    return (((tested[0] & tested[1]) & (tested[2] & tested[3])) &
            ((tested[4] & tested[5]) & (tested[6] & tested[7])) & 1) != 0;
}

bool scalar_block_check(const uint8_t *block, uint64_t h, uint32_t hashes, uint32_t block_log2) {
    switch (hashes) {
        case 1: return scalar_block_check_of<1>(block, h, block_log2);
        case 2: return scalar_block_check_of<2>(block, h, block_log2);
        case 3: return scalar_block_check_of<3>(block, h, block_log2);
        case 4: return scalar_block_check_of<4>(block, h, block_log2);
        case 5: return scalar_block_check_of<5>(block, h, block_log2);
        case 6: return scalar_block_check_of<6>(block, h, block_log2);
        case 7: return scalar_block_check_of<7>(block, h, block_log2);
        case 8: return scalar_block_check_of<8>(block, h, block_log2);
    }
    return scalar_block_contains(block, KeyHash{h, 0}, kFormatVersion2, hashes, block_log2);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BLOOMFILTER_X86_VECTORS 1

struct alignas(64) VectorMultipliers {
    uint64_t m[kPathMaxHashes];
};
constexpr VectorMultipliers kVectorMultipliers = [] {
    VectorMultipliers v{};
    for (uint32_t i = 0; i < kPathMaxHashes; i++) v.m[i] = kMultipliers.m[i];
    return v;
}();

// GCC 12 warns that its own AVX-512 intrinsics read an uninitialized value: their placeholder
// operand is declared `__m512i __Y = __Y;`.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// Loading the whole 4096-bit block into eight registers and picking the words by permutes
// instead of the gather was no faster in core_bench on an AMD EPYC (Zen 5): 12.8 against 12.7 ns
// per check of the 1.2 MB filter, and 11.0 against 9.8 with its blocks in cache.
__attribute__((target("avx512f,avx512dq"))) bool avx512_block_check(const uint8_t *block,
                                                                    uint64_t h, uint32_t hashes,
                                                                    uint32_t block_log2) {
    const __m512i products =
        _mm512_mullo_epi64(_mm512_set1_epi64(int64_t(h)), _mm512_load_si512(kVectorMultipliers.m));
    const __m512i bits = _mm512_srl_epi64(products, _mm_cvtsi32_si128(int(64 - block_log2)));
    const __mmask8 used = __mmask8((1u << hashes) - 1);
    const __m512i words = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), used,
                                                      _mm512_srli_epi64(bits, 6), block, 8);
    const __m512i shifted = _mm512_srlv_epi64(words, _mm512_and_si512(bits, _mm512_set1_epi64(63)));
    const __mmask8 set = _mm512_test_epi64_mask(shifted, _mm512_set1_epi64(1));
    return (set & used) == used;
}
#pragma GCC diagnostic pop

// AVX2 has no 64-bit multiply: the low 64 bits of h * M come from three 32 x 32 products.
__attribute__((target("avx2"))) inline __m256i multiply_low64(__m256i h_low, __m256i h_high,
                                                              __m256i m) {
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(h_high, m),
                                           _mm256_mul_epu32(h_low, _mm256_srli_epi64(m, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(h_low, m), _mm256_slli_epi64(cross, 32));
}

// Four positions: their bits, each in bit 0 of its lane (the other bits are noise).
__attribute__((target("avx2"))) inline __m256i avx2_test_four(const uint8_t *block, __m256i h_low,
                                                              __m256i h_high,
                                                              const uint64_t *multipliers,
                                                              __m128i shift) {
    const __m256i bits = _mm256_srl_epi64(
        multiply_low64(h_low, h_high,
                       _mm256_load_si256(reinterpret_cast<const __m256i *>(multipliers))),
        shift);
    const __m256i words = _mm256_i64gather_epi64(reinterpret_cast<const long long *>(block),
                                                 _mm256_srli_epi64(bits, 6), 8);
    return _mm256_srlv_epi64(words, _mm256_and_si256(bits, _mm256_set1_epi64x(63)));
}

// unused_lanes + 4 - n, read as four lanes: n lanes of 0, then lanes of 1 (counted as set).
constexpr int64_t kUnusedLanes[8] = {0, 0, 0, 0, 1, 1, 1, 1};

// One gather when k <= 4 (10.3 against 11.9 ns per check with two, at k = 4 on an Intel Xeon),
// two otherwise.
__attribute__((target("avx2"))) bool avx2_block_check(const uint8_t *block, uint64_t h,
                                                      uint32_t hashes, uint32_t block_log2) {
    const __m256i h_low = _mm256_set1_epi64x(int64_t(h)), h_high = _mm256_srli_epi64(h_low, 32);
    const __m128i shift = _mm_cvtsi32_si128(int(64 - block_log2));
    const uint32_t first = hashes < 4 ? hashes : 4;
    __m256i tested = _mm256_or_si256(
        avx2_test_four(block, h_low, h_high, kVectorMultipliers.m, shift),
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(kUnusedLanes + 4 - first)));
    // Lanes past `hashes` read a word of the block too, but count as set.
    if (hashes > 4)
        tested = _mm256_and_si256(
            tested,
            _mm256_or_si256(
                avx2_test_four(block, h_low, h_high, kVectorMultipliers.m + 4, shift),
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(kUnusedLanes + 8 - hashes))));
    return _mm256_testc_si256(tested, _mm256_set1_epi64x(1)) != 0;
}
#endif

}  // namespace

BlockCheck chosen_block_check = scalar_block_check;

BlockCheck block_check_for(CheckPath path) {
#ifdef BLOOMFILTER_X86_VECTORS
    __builtin_cpu_init();
    if (path == CheckPath::avx512 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq"))
        return avx512_block_check;
    if (path == CheckPath::avx2 && __builtin_cpu_supports("avx2")) return avx2_block_check;
#endif
    return path == CheckPath::scalar ? scalar_block_check : nullptr;
}

const char *check_path_name(CheckPath path) {
    switch (path) {
        case CheckPath::scalar: return "scalar";
        case CheckPath::avx2: return "avx2";
        case CheckPath::avx512: return "avx512";
    }
    return "unknown";
}

CheckPath chosen_check_path() {
    for (CheckPath path : {CheckPath::avx2, CheckPath::avx512})
        if (chosen_block_check == block_check_for(path)) return path;
    return CheckPath::scalar;
}

bool set_check_path(CheckPath path) {
    BlockCheck check = block_check_for(path);
    if (check == nullptr) return false;
    chosen_block_check = check;
    return true;
}

namespace {

// The calibration's filter: 512 blocks of 4096 bits, half of them set (more than the L1 cache
// holds, less than L2), checked at k = 7, as a filter of error_rate 0.01 is.
constexpr uint32_t kCalibrationBlockLog2 = 12;
constexpr uint32_t kCalibrationBlocks = 512;
constexpr uint32_t kCalibrationHashes = 7;
constexpr uint32_t kCalibrationChecks = 1024;  // per timing, about 10 us
constexpr uint32_t kCalibrationRounds = 15;

// Nanoseconds for kCalibrationChecks checks of keys from `seed` on; *found counts the keys found.
double time_checks(BlockCheck check, const uint8_t *blocks, uint64_t seed, uint64_t *found) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t count = 0;
    for (uint32_t i = 0; i < kCalibrationChecks; i++) {
        const uint64_t h = finalize64(seed + i * 0x9e3779b97f4a7c15ull);
        const uint8_t *block =
            blocks + (uint64_t(block_index(h, kCalibrationBlocks)) << (kCalibrationBlockLog2 - 3));
        count += check(block, h, kCalibrationHashes, kCalibrationBlockLog2);
    }
    const auto end = std::chrono::steady_clock::now();
    *found = count;
    return double(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

double median_of(double *values, uint32_t count) {
    std::sort(values, values + count);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

}  // namespace

CheckCalibration choose_check_path() {
    const auto start = std::chrono::steady_clock::now();
    CheckCalibration result;
    BlockCheck checks[kCheckPaths];
    uint32_t available = 0;
    for (uint32_t p = 0; p < kCheckPaths; p++)
        if ((checks[p] = block_check_for(CheckPath(p))) != nullptr) available++;
    const size_t bytes = size_t(kCalibrationBlocks) << (kCalibrationBlockLog2 - 3);
    uint8_t *blocks = available > 1 ? static_cast<uint8_t *>(std::malloc(bytes)) : nullptr;
    if (blocks != nullptr) {
        for (size_t i = 0; i < bytes; i += 8) store_u64(blocks + i, finalize64(i + 1));
        // Times of the paths next to each other in each round, in an order rotating round by
        // round, so a change of load or clock speed weighs on all of them alike; the first round
        // warms the caches and is not counted.
        double ratios[kCheckPaths][kCalibrationRounds];
        bool agrees[kCheckPaths] = {true, true, true};
        for (uint32_t round = 0; round <= kCalibrationRounds; round++) {
            double nanoseconds[kCheckPaths] = {0, 0, 0};
            uint64_t found[kCheckPaths] = {0, 0, 0};
            for (uint32_t step = 0; step < kCheckPaths; step++) {
                const uint32_t p = (step + round) % kCheckPaths;
                if (checks[p] != nullptr)
                    nanoseconds[p] =
                        time_checks(checks[p], blocks, uint64_t(round) << 32, &found[p]);
            }
            // The same keys each time: a path that found a different number is not used (the
            // count also keeps the compiler from dropping the calls).
            for (uint32_t p = 1; p < kCheckPaths; p++)
                agrees[p] = agrees[p] && found[p] == found[0];
            if (round == 0) continue;
            for (uint32_t p = 0; p < kCheckPaths; p++)
                ratios[p][round - 1] = nanoseconds[p] / nanoseconds[0];
        }
        std::free(blocks);
        result.rounds = kCalibrationRounds;
        for (uint32_t p = 1; p < kCheckPaths; p++) {
            if (checks[p] == nullptr) continue;
            result.relative_time[p] = median_of(ratios[p], kCalibrationRounds);
            if (agrees[p] && result.relative_time[p] <= 0.97 &&
                result.relative_time[p] < result.relative_time[size_t(result.chosen)])
                result.chosen = CheckPath(p);
        }
    }
    chosen_block_check = checks[size_t(result.chosen)];
    result.microseconds = double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count()) /
                          1e3;
    return result;
}

}  // namespace bloomfilter
