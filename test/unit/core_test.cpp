// Unit tests for the Bloom filter core (src/core): sizing, hashing, the byte format and its
// validation, add / contains, union, statistics, the aggregate's HashSet and DistinctSketch, hex
// text and shards. Built plain and under AddressSanitizer + UndefinedBehaviorSanitizer by
// `make unit-test`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/core/bloom.hpp"
#include "../../src/core/distinct.hpp"
#include "../../src/core/hash_lanes.hpp"

using namespace bloomfilter;

namespace {

// A filter held in a vector, built through the public API.
struct Filter {
    Parameters parameters;
    std::vector<uint8_t> bytes;

    Filter(uint64_t capacity, double error_rate, uint32_t version = kFormatVersion) {
        Status status = size_filter(capacity, error_rate, &parameters);
        EXPECT_EQ(status, Status::ok) << status_message(status);
        parameters.version = version;
        // Garbage first, so the test sees write_empty() clear every byte.
        bytes.assign(parameters.encoded_bytes(), 0xa5);
        write_empty(parameters, bytes.data());
    }
    FilterRef ref() { return FilterRef::of(bytes.data(), parameters); }
    Header header() const {
        Header header;
        Status status = validate(bytes.data(), bytes.size(), &header);
        EXPECT_EQ(status, Status::ok) << status_message(status);
        return header;
    }
    void add(const std::string &key) { ref().add(ref().hash(key.data(), key.size())); }
    bool contains(const std::string &key) {
        return ref().contains(ref().hash(key.data(), key.size()));
    }
    size_t bit_bytes() const { return bytes.size() - kHeaderBytes; }
};

// The article's keys, "user<i>@mail.com", written into a reusable buffer.
struct SeedKey {
    char text[48];
    size_t length = 0;
    KeyHash hash(uint64_t i, uint32_t version = kFormatVersion) {
        length =
            size_t(std::snprintf(text, sizeof text, "user%llu@mail.com", (unsigned long long)i));
        return hash_bytes(version, text, length);
    }
};

uint64_t popcount_bytes(const uint8_t *data, size_t length) {
    uint64_t set = 0;
    for (size_t i = 0; i < length; i++) set += uint64_t(__builtin_popcount(data[i]));
    return set;
}

// The 36 header bytes written field by field from the format's offsets, independently of
// write_empty(), so the two can be compared.
std::vector<uint8_t> header_by_hand(const Parameters &p, uint64_t inserted) {
    std::vector<uint8_t> h(kHeaderBytes, 0);
    std::memcpy(h.data() + kOffsetMagic, "BLOM", 4);
    h[kOffsetVersion] = uint8_t(p.version);
    h[kOffsetBlockLog2] = uint8_t(p.block_log2);
    auto put = [&](size_t offset, uint64_t value, int bytes) {
        for (int i = 0; i < bytes; i++) h[offset + i] = uint8_t(value >> (8 * i));
    };
    uint64_t rate_bits;
    std::memcpy(&rate_bits, &p.error_rate, 8);
    put(kOffsetHashes, p.hashes, 2);
    put(kOffsetBlocks, p.blocks, 4);
    put(kOffsetCapacity, p.capacity, 8);
    put(kOffsetErrorRate, rate_bits, 8);
    put(kOffsetInserted, inserted, 8);
    return h;
}

void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
void put_double(uint8_t *p, double d) {
    uint64_t raw;
    std::memcpy(&raw, &d, 8);
    put_u64(p, raw);
}

const Status kAllStatuses[] = {
    Status::ok,
    Status::capacity_out_of_range,
    Status::error_rate_out_of_range,
    Status::too_large,
    Status::truncated,
    Status::bad_magic,
    Status::unsupported_version,
    Status::bad_block_size,
    Status::bad_parameters,
    Status::inconsistent_sizing,
    Status::bad_length,
    Status::capacity_mismatch,
    Status::error_rate_mismatch,
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sizing

TEST(Sizing, SeedFilter) {
    const uint64_t m = optimal_bits(1000000, 0.01);
    EXPECT_EQ(m, 9585059u);
    Parameters p;
    ASSERT_EQ(size_filter(1000000, 0.01, &p), Status::ok);
    EXPECT_EQ(p.capacity, 1000000u);
    EXPECT_EQ(p.error_rate, 0.01);
    EXPECT_EQ(p.hashes, 7u);
    EXPECT_EQ(p.block_log2, 12u);
    EXPECT_EQ(p.block_bytes(), 512u);
    EXPECT_EQ(p.blocks, 2352u);
    EXPECT_EQ(p.bits(), 9633792u);
    EXPECT_GE(p.bits(), m);
    EXPECT_LE(double(p.bits()), 1.01 * double(m));
    EXPECT_EQ(p.encoded_bytes(), 1204260u);  // 36 + 2352 * 512
    EXPECT_NEAR(double(p.encoded_bytes()) / 1024, 1170, 10);
}

TEST(Sizing, OptimalBitsFormula) {
    const double ln2 = std::log(2.0);
    for (uint64_t n : {1ull, 7ull, 1000ull, 123457ull, 1000000ull, 50000000ull})
        for (double p : {0.5, 0.1, 0.05, 0.01, 0.001, 1e-6}) {
            double m = std::ceil(-(double(n) * std::log(p)) / (ln2 * ln2));
            EXPECT_EQ(optimal_bits(n, p), uint64_t(m)) << n << " " << p;
        }
    EXPECT_EQ(optimal_bits(1000, 0.01), 9586u);
    EXPECT_EQ(optimal_bits(1, 0.5), 2u);
    // Never zero bits, even where the formula gives less than one.
    EXPECT_EQ(optimal_bits(1, 0.9999999), 1u);
    // Beyond the 1 GB limit it saturates rather than wrapping.
    EXPECT_EQ(optimal_bits(std::numeric_limits<uint64_t>::max(), 0.01),
              std::numeric_limits<uint64_t>::max());
}

TEST(Sizing, HashesFormula) {
    struct Case {
        uint64_t capacity;
        double error_rate;
        uint32_t hashes;
    };
    const Case cases[] = {
        {1000000, 0.5, 1},   {1000000, 0.3, 2},    {1000000, 0.1, 3},    {1000000, 0.05, 4},
        {1000000, 0.02, 6},  {1000000, 0.01, 7},   {1000000, 0.001, 10}, {1000000, 1e-4, 13},
        {1000000, 1e-6, 20}, {1000000, 1e-10, 33}, {1, 0.05, 5},         {10, 0.05, 4},
        {1, 0.9999999, 1},
    };
    for (const Case &c : cases) {
        Parameters p;
        ASSERT_EQ(size_filter(c.capacity, c.error_rate, &p), Status::ok);
        EXPECT_EQ(p.hashes, c.hashes) << c.capacity << " " << c.error_rate;
        double m = double(optimal_bits(c.capacity, c.error_rate));
        double k = std::max(1.0, std::round(m / double(c.capacity) * std::log(2.0)));
        EXPECT_EQ(p.hashes, uint32_t(k)) << c.capacity << " " << c.error_rate;
    }
}

TEST(Sizing, BlockSize) {
    // 4096-bit blocks up to k = 7, then growing as (k / 7)^3.
    EXPECT_EQ(block_log2_for(1, 1u << 30), 12u);
    EXPECT_EQ(block_log2_for(7, 1u << 30), 12u);
    EXPECT_EQ(block_log2_for(8, 1u << 30), 13u);
    EXPECT_EQ(block_log2_for(10, 1u << 30), 14u);
    EXPECT_EQ(block_log2_for(14, 1u << 30), 15u);  // exactly 8 x 4096 wanted
    EXPECT_EQ(block_log2_for(20, 1u << 30), 17u);
    EXPECT_EQ(block_log2_for(33, 1u << 30), 19u);
    EXPECT_EQ(block_log2_for(1000, uint64_t(1) << 40), kMaxBlockLog2);
    // A filter that fits one block takes the smallest power of two holding its bits.
    EXPECT_EQ(block_log2_for(33, 1), 12u);
    EXPECT_EQ(block_log2_for(33, 4096), 12u);
    EXPECT_EQ(block_log2_for(33, 4097), 13u);
    EXPECT_EQ(block_log2_for(33, 47926), 16u);
}

TEST(Sizing, BitsNeverBelowTheSeedsM) {
    for (uint64_t n : {1ull, 2ull, 10ull, 999ull, 1000ull, 4096ull, 65537ull, 200000ull, 1000000ull,
                       30000000ull})
        for (double p :
             {0.9, 0.5, 0.3, 0.1, 0.05, 0.02, 0.01, 0.003, 0.001, 1e-4, 1e-6, 1e-10, 1e-30}) {
            Parameters s;
            ASSERT_EQ(size_filter(n, p, &s), Status::ok) << n << " " << p;
            const uint64_t m = optimal_bits(n, p);
            // Where the formula's k rounds to 0 (p above about 0.6), one hash needs
            // m = -n / ln(1 - p) bits instead.
            const bool one_hash = std::round(double(m) / double(n) * std::log(2.0)) < 1;
            const double wanted =
                one_hash ? std::max(double(m), std::ceil(-double(n) / std::log1p(-p))) : double(m);
            EXPECT_GE(s.bits(), m) << n << " " << p;
            EXPECT_GE(s.blocks, 1u);
            EXPECT_GE(s.block_log2, kMinBlockLog2);
            EXPECT_LE(s.block_log2, kMaxBlockLog2);
            EXPECT_EQ(s.block_log2, block_log2_for(s.hashes, uint64_t(wanted)));
            EXPECT_LE(s.encoded_bytes(), kMaxEncodedBytes);
            // 0.5% padding, then at most one block of rounding.
            EXPECT_LE(double(s.bits()),
                      std::ceil(1.005 * wanted) + double(uint64_t(1) << s.block_log2))
                << n << " " << p;
            if (s.blocks >= 200) {
                EXPECT_LE(double(s.bits()), 1.01 * wanted) << n << " " << p;
            }
        }
}

TEST(Sizing, Errors) {
    Parameters p;
    EXPECT_EQ(size_filter(0, 0.01, &p), Status::capacity_out_of_range);
    EXPECT_EQ(size_filter(0, 0.0, &p), Status::capacity_out_of_range);
    const double bad_rates[] = {0.0,
                                -0.0,
                                1.0,
                                -0.01,
                                -1.0,
                                1.5,
                                std::numeric_limits<double>::quiet_NaN(),
                                -std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::signaling_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
    for (double rate : bad_rates)
        EXPECT_EQ(size_filter(1000, rate, &p), Status::error_rate_out_of_range) << rate;
    // The extremes that are in range.
    EXPECT_EQ(size_filter(1000, std::nextafter(1.0, 0.0), &p), Status::ok);
    EXPECT_EQ(size_filter(1000, std::numeric_limits<double>::denorm_min(), &p), Status::ok);
    EXPECT_EQ(size_filter(1, 0.01, &p), Status::ok);
    // Over 1 GB.
    EXPECT_EQ(size_filter(1000000000, 0.01, &p), Status::too_large);
    EXPECT_EQ(size_filter(100000000, 1e-300, &p), Status::too_large);
    EXPECT_EQ(size_filter(std::numeric_limits<uint64_t>::max(), 0.01, &p), Status::too_large);
    EXPECT_EQ(size_filter(uint64_t(1) << 53, 0.5, &p), Status::too_large);
}

// The largest filter accepted at a given error rate fits the 1 GB limit, and one more key of
// capacity does not.
TEST(Sizing, OneGigabyteBoundary) {
    for (double rate : {0.5, 0.01, 1e-6, 1e-300}) {
        Parameters p;
        uint64_t ok = 1, too_large = uint64_t(1) << 40;
        ASSERT_EQ(size_filter(ok, rate, &p), Status::ok);
        ASSERT_EQ(size_filter(too_large, rate, &p), Status::too_large);
        while (too_large - ok > 1) {
            uint64_t mid = ok + (too_large - ok) / 2;
            Status s = size_filter(mid, rate, &p);
            ASSERT_TRUE(s == Status::ok || s == Status::too_large) << status_message(s);
            (s == Status::ok ? ok : too_large) = mid;
        }
        ASSERT_EQ(size_filter(ok, rate, &p), Status::ok);
        EXPECT_LE(p.encoded_bytes(), kMaxEncodedBytes) << rate;
        EXPECT_LE(p.encoded_bytes() + 4, 0x3fffffffu) << rate;
        // The largest filter's header passes the slice check (no need to allocate 1 GB).
        std::vector<uint8_t> header = header_by_hand(p, 0);
        Header decoded;
        EXPECT_EQ(read_header(header.data(), header.size(), p.encoded_bytes(), &decoded),
                  Status::ok)
            << rate;
        EXPECT_EQ(size_filter(ok + 1, rate, &p), Status::too_large) << rate;
        std::printf("error_rate %g: largest capacity %llu\n", rate, (unsigned long long)ok);
    }
}

// ---------------------------------------------------------------------------------------------
// Hashing and the bit layout

TEST(Hashing, Xxh3KnownAnswer) {
    // XXH3-128 (version 1) and XXH3-64 (version 2) of the empty input, as published by xxHash.
    KeyHash h = hash_bytes(kFormatVersion1, "", 0);
    EXPECT_EQ(h.high, 0x99aa06d3014798d8ull);
    EXPECT_EQ(h.low, 0x6001c324468d497full);
    h = hash_bytes(kFormatVersion2, "", 0);
    EXPECT_EQ(h.low, 0x2d06800538d394c2ull);
    EXPECT_EQ(h.high, 0u);
    for (uint32_t version : {kFormatVersion1, kFormatVersion2}) {
        KeyHash a = hash_bytes(version, "user7@mail.com", 14),
                b = hash_bytes(version, "user7@mail.com", 14);
        EXPECT_EQ(a.high, b.high);
        EXPECT_EQ(a.low, b.low);
        KeyHash c = hash_bytes(version, "user7@mail.co", 13);
        EXPECT_FALSE(a.high == c.high && a.low == c.low);
    }
}

// A composite key: XXH3-64 of its parts' hashes, 8 bytes little-endian each; one part is its own
// hash (a one-column index is unchanged). Kept on the stack of glue that may longjmp.
static_assert(std::is_trivially_destructible<CompositeKey>::value, "no destructor to skip");

namespace {

uint64_t part(const std::string &key) {
    return hash_bytes(kFormatVersion2, key.data(), key.size()).low;
}
uint64_t part(int64_t key) {
    uint8_t bytes[8];
    store_u64(bytes, uint64_t(key));
    return hash_bytes(kFormatVersion2, bytes, 8).low;
}
uint64_t composite(std::initializer_list<uint64_t> parts) {
    CompositeKey key;
    for (uint64_t p : parts) EXPECT_TRUE(key.add(p));
    return key.hash().low;
}

}  // namespace

TEST(Hashing, CompositeKeys) {
    EXPECT_EQ(composite({part("abc")}), part("abc"));
    EXPECT_EQ(composite({part(42)}), part(42));
    // The definition, spelled out.
    uint8_t bytes[16];
    store_u64(bytes, part("t1"));
    store_u64(bytes + 8, part("x"));
    EXPECT_EQ(composite({part("t1"), part("x")}), XXH3_64bits(bytes, 16));
    EXPECT_EQ(composite({part("t1"), part("x")}), composite({part("t1"), part("x")}));
    EXPECT_NE(composite({part("t1"), part("x")}), composite({part("t2"), part("x")}));
    // No separator to confuse: the parts have fixed widths.
    EXPECT_NE(composite({part("ab"), part("c")}), composite({part("a"), part("bc")}));
    EXPECT_NE(composite({part("a"), part("b")}), composite({part("b"), part("a")}));
    EXPECT_NE(composite({part(""), part("a")}), composite({part("a"), part("")}));
    // A bigint's 8 bytes are not its decimal text.
    EXPECT_NE(composite({part(42), part("x")}), composite({part("42"), part("x")}));
    // Lists of other lengths hash inputs of other lengths.
    EXPECT_NE(composite({part("a"), part("b")}), composite({part("a"), part("b"), part("")}));
    EXPECT_NE(composite({part("a"), part("a")}), part("a"));
    CompositeKey full;
    for (uint32_t i = 0; i < kMaxKeyParts; i++) EXPECT_TRUE(full.add(part(int64_t(i))));
    EXPECT_FALSE(full.add(part(int64_t(8))));
    EXPECT_EQ(full.count, kMaxKeyParts);
    uint8_t all[8 * kMaxKeyParts];
    for (uint32_t i = 0; i < kMaxKeyParts; i++) store_u64(all + 8 * i, part(int64_t(i)));
    EXPECT_EQ(full.hash().low, XXH3_64bits(all, sizeof all));
}

// hash_lanes: each lane's hash is hash_bytes()'s, for words and pairs of words of every kind:
// zero, all ones, single bits, small and negative integers, and random ones.
TEST(Hashing, Lanes) {
    if (!hash_lanes::available()) GTEST_SKIP() << "no AVX-512 F and DQ on this CPU";
    std::vector<uint64_t> words = {0,
                                   ~uint64_t(0),
                                   1,
                                   42,
                                   uint64_t(-1),
                                   uint64_t(-42),
                                   uint64_t(1) << 63,
                                   0x00000000FFFFFFFFull,
                                   0xFFFFFFFF00000000ull};
    for (uint32_t bit = 0; bit < 64; bit++) words.push_back(uint64_t(1) << bit);
    std::mt19937_64 random(7);
    while (words.size() % hash_lanes::kLanes != 0 || words.size() < 100000)
        words.push_back(random());
    std::vector<uint64_t> hashed(words.size()), paired(words.size());
    for (size_t i = 0; i < words.size(); i += hash_lanes::kLanes) {
        hash_lanes::hash_words(&words[i], &hashed[i]);
        // Each word with the next one's hash, so that both halves take every kind of word.
        uint64_t second[hash_lanes::kLanes];
        for (uint32_t j = 0; j < hash_lanes::kLanes; j++)
            second[j] = words[(i + j + 1) % words.size()];
        hash_lanes::hash_pairs(&words[i], second, &paired[i]);
    }
    for (size_t i = 0; i < words.size(); i++) {
        ASSERT_EQ(hashed[i], part(int64_t(words[i]))) << i;
        ASSERT_EQ(paired[i], composite({words[i], words[(i + 1) % words.size()]})) << i;
    }
    // In place, as the Python client calls them.
    uint64_t in_place[hash_lanes::kLanes], other[hash_lanes::kLanes];
    for (uint32_t j = 0; j < hash_lanes::kLanes; j++) in_place[j] = other[j] = words[j];
    hash_lanes::hash_words(in_place, in_place);
    hash_lanes::hash_pairs(in_place, other, other);
    for (uint32_t j = 0; j < hash_lanes::kLanes; j++) {
        EXPECT_EQ(in_place[j], hashed[j]);
        EXPECT_EQ(other[j], composite({hashed[j], words[j]}));
    }
}

// The version 2 multipliers: the table holds the formula's first values, all odd and distinct.
TEST(Hashing, PositionMultipliers) {
    std::set<uint64_t> seen;
    for (uint32_t i = 0; i < 1000; i++) {
        uint64_t m = position_multiplier(i);
        EXPECT_EQ(m, position_multiplier_formula(i)) << i;
        EXPECT_EQ(m & 1, 1u) << i;
        EXPECT_TRUE(seen.insert(m).second) << i;
    }
    EXPECT_EQ(position_multiplier(0), finalize64(0x9e3779b97f4a7c15ull) | 1);
}

TEST(Layout, OneKeyTouchesOneBlock) {
    for (uint32_t version : {kFormatVersion1, kFormatVersion2}) {
        Filter f(100000, 0.01, version);
        ASSERT_GT(f.parameters.blocks, 100u);
        SeedKey key;
        for (uint64_t i = 0; i < 200; i++) {
            std::fill(f.bytes.begin() + kHeaderBytes, f.bytes.end(), 0);
            KeyHash h = key.hash(i, version);
            EXPECT_FALSE(f.ref().contains(h));
            f.ref().add(h);
            EXPECT_TRUE(f.ref().contains(h));
            const uint32_t block = block_index(block_hash(h, version), f.parameters.blocks);
            ASSERT_LT(block, f.parameters.blocks);
            const uint8_t *start = f.bytes.data() + block_offset(block, f.parameters.block_log2);
            const uint64_t in_block = popcount_bytes(start, f.parameters.block_bytes());
            EXPECT_GE(in_block, 1u);
            EXPECT_LE(in_block, f.parameters.hashes);
            EXPECT_EQ(popcount_bytes(f.bytes.data() + kHeaderBytes, f.bit_bytes()), in_block);
            // The header is untouched.
            EXPECT_EQ(std::vector<uint8_t>(f.bytes.begin(), f.bytes.begin() + kHeaderBytes),
                      header_by_hand(f.parameters, 0));
        }
    }
}

// Pins the bit layout of each version (block choice, positions, byte order of the bits): stored
// filters stay readable only while this holds. The version 1 value was written by bloomfilter
// 1.0 and 1.1, before version 2 existed.
TEST(Layout, GoldenEncoding) {
    Filter v1(1000, 0.01, kFormatVersion1);
    for (int i = 0; i < 1000; i++) v1.add("user" + std::to_string(i) + "@mail.com");
    EXPECT_EQ(XXH3_64bits(v1.bytes.data(), v1.bytes.size()), 0xfc590aa52a485b34ull);
    Filter v2(1000, 0.01, kFormatVersion2);
    for (int i = 0; i < 1000; i++) v2.add("user" + std::to_string(i) + "@mail.com");
    EXPECT_EQ(XXH3_64bits(v2.bytes.data(), v2.bytes.size()), 0x09f608e9a9d4fde5ull);
}

// The reference answer: every one of the key's positions, as block_add() sets them, has its bit
// set, read one byte at a time.
bool reference_contains(const uint8_t *block, KeyHash h, uint32_t version, uint32_t hashes,
                        uint32_t block_log2) {
    bool all_set = true;
    for_each_position(h, version, hashes, block_log2, [&](uint32_t bit) {
        all_set = all_set && (block[bit >> 3] >> (bit & 7) & 1) != 0;
    });
    return all_set;
}

// The loop that checks filters no path handles (version 1, more than 8 hashes) reads whole
// words: it answers as the byte-by-byte reference does.
TEST(CheckPaths, ScalarLoopMatchesTheReference) {
    std::mt19937_64 random(5);
    for (uint32_t block_log2 : {12u, 13u, 15u}) {
        std::vector<uint8_t> block(size_t(1) << (block_log2 - 3));
        for (double fill : {0.5, 0.95}) {
            std::bernoulli_distribution bit_set(fill);
            for (uint8_t &byte : block) {
                byte = 0;
                for (int b = 0; b < 8; b++) byte |= uint8_t(bit_set(random) << b);
            }
            for (uint32_t version : {kFormatVersion1, kFormatVersion2})
                for (uint32_t hashes : {1u, 3u, 7u, 8u, 9u, 14u})
                    for (int i = 0; i < 3000; i++) {
                        KeyHash h{random(), version == kFormatVersion1 ? random() : 0};
                        ASSERT_EQ(
                            scalar_block_contains(block.data(), h, version, hashes, block_log2),
                            reference_contains(block.data(), h, version, hashes, block_log2))
                            << "version " << version << " hashes " << hashes << " block_log2 "
                            << block_log2;
                    }
        }
    }
}

// Each way of checking a block, on its own: where the CPU has it, it answers as the scalar loop
// does; where it lacks it, the test says it was skipped.
class CheckPathTest : public ::testing::TestWithParam<CheckPath> {
protected:
    BlockCheck check() {
        BlockCheck check = block_check_for(GetParam());
        if (check == nullptr)
            std::printf("this CPU (or build) has no %s path\n", check_path_name(GetParam()));
        return check;
    }
};

// Every number of hashes a path handles, several block sizes, blocks from sparse to nearly full
// (so both answers come up), and keys whose bits sit at the block's first and last words.
TEST_P(CheckPathTest, SameAnswersAsTheScalarLoopOnRandomBlocks) {
    BlockCheck check = this->check();
    if (check == nullptr)
        GTEST_SKIP() << "no " << check_path_name(GetParam()) << " path on this CPU";
    std::mt19937_64 random(7);
    for (uint32_t block_log2 : {12u, 13u, 16u}) {
        std::vector<uint8_t> block(size_t(1) << (block_log2 - 3));
        for (double fill : {0.02, 0.5, 0.9, 0.99}) {
            std::bernoulli_distribution bit_set(fill);
            for (uint8_t &byte : block) {
                byte = 0;
                for (int b = 0; b < 8; b++) byte |= uint8_t(bit_set(random) << b);
            }
            uint64_t answers[2] = {0, 0};
            for (uint32_t hashes = 1; hashes <= kPathMaxHashes; hashes++) {
                for (int i = 0; i < 4000; i++) {
                    KeyHash h{random(), 0};
                    if (i == 0) h.low = 0;  // every position is bit 0
                    bool expected =
                        scalar_block_contains(block.data(), h, kFormatVersion2, hashes, block_log2);
                    ASSERT_EQ(check(block.data(), h.low, hashes, block_log2), expected)
                        << check_path_name(GetParam()) << " block_log2 " << block_log2 << " fill "
                        << fill << " hashes " << hashes << " h " << h.low;
                    answers[expected]++;
                }
            }
            if (fill >= 0.5) {
                EXPECT_GT(answers[1], 0u) << fill;
            }
            if (fill <= 0.9) {
                EXPECT_GT(answers[0], 0u) << fill;
            }
        }
    }
    // The block's last bit, through the last word: a block of all ones but that bit.
    std::vector<uint8_t> block(512, 0xff);
    block.back() = 0x7f;
    for (uint32_t hashes = 1; hashes <= kPathMaxHashes; hashes++)
        for (int i = 0; i < 20000; i++) {
            KeyHash h{random(), 0};
            ASSERT_EQ(check(block.data(), h.low, hashes, 12),
                      scalar_block_contains(block.data(), h, kFormatVersion2, hashes, 12));
        }
}

// The check that stops at the first bit not set (index pages) answers as the scalar loop, for
// every number of hashes up to 16, block sizes, and blocks from sparse to full.
TEST(BlockContainsStopping, SameAnswersAsTheScalarLoop) {
    std::mt19937_64 random(5);
    for (uint32_t block_log2 : {12u, 14u, 17u}) {
        std::vector<uint8_t> block(size_t(1) << (block_log2 - 3));
        for (double fill : {0.0, 0.3, 0.6, 0.95, 1.0}) {
            std::bernoulli_distribution bit_set(fill);
            for (uint8_t &byte : block) {
                byte = 0;
                for (int b = 0; b < 8; b++) byte |= uint8_t(bit_set(random) << b);
            }
            uint64_t answers[2] = {0, 0};
            for (uint32_t hashes = 1; hashes <= 16; hashes++)
                for (int i = 0; i < 2000; i++) {
                    KeyHash h{random(), 0};
                    const bool expected =
                        scalar_block_contains(block.data(), h, kFormatVersion2, hashes, block_log2);
                    ASSERT_EQ(block_contains_stopping(block.data(), h, hashes, block_log2),
                              expected)
                        << "block_log2 " << block_log2 << " fill " << fill << " hashes " << hashes;
                    answers[expected]++;
                }
            if (fill > 0.5) {
                EXPECT_GT(answers[1], 0u) << fill;
            }
            if (fill < 1.0) {
                EXPECT_GT(answers[0], 0u) << fill;
            }
        }
    }
}

// Real filters of every number of hashes a path handles (error rates 0.5 down to 0.004), filled
// to capacity and beyond with random keys, probed with keys present and absent: the path's
// answer through FilterRef is the scalar loop's, and no stored key is missed.
TEST_P(CheckPathTest, SameAnswersAsTheScalarLoopOnFilters) {
    BlockCheck check = this->check();
    if (check == nullptr)
        GTEST_SKIP() << "no " << check_path_name(GetParam()) << " path on this CPU";
    std::mt19937_64 random(11);
    uint32_t hashes_seen = 0;
    for (double rate : {0.5, 0.3, 0.15, 0.08, 0.04, 0.02, 0.01, 0.004}) {
        for (uint64_t capacity : {300u, 5000u, 40000u}) {
            Filter f(capacity, rate);
            ASSERT_LE(f.parameters.hashes, kPathMaxHashes);
            hashes_seen |= 1u << f.parameters.hashes;
            FilterRef through_path = f.ref(), through_loop = f.ref();
            through_path.check = check;
            through_loop.check = nullptr;
            std::vector<uint64_t> stored;
            for (uint64_t i = 0; i < capacity * 3 / 2; i++) {
                stored.push_back(random());
                through_path.add(KeyHash{stored.back(), 0});
            }
            for (uint64_t key : stored) ASSERT_TRUE(through_path.contains(KeyHash{key, 0}));
            uint64_t positives = 0;
            for (int i = 0; i < 20000; i++) {
                KeyHash h{random(), 0};
                const bool expected = through_loop.contains(h);
                ASSERT_EQ(through_path.contains(h), expected)
                    << rate << " " << capacity << " " << h.low;
                positives += expected;
            }
            EXPECT_GT(positives, 0u)
                << rate << " " << capacity;  // overfilled: both answers come up
        }
    }
    EXPECT_EQ(hashes_seen, 0x1feu) << "filters of 1 to 8 hashes";
}

INSTANTIATE_TEST_SUITE_P(EachPath, CheckPathTest,
                         ::testing::Values(CheckPath::scalar, CheckPath::avx2, CheckPath::avx512),
                         [](const ::testing::TestParamInfo<CheckPath> &info) {
                             return std::string(check_path_name(info.param));
                         });

// The calibration keeps a path the CPU has, and one no slower than the scalar one by its own
// measure; FilterRef then uses it for the filters it applies to, and the loop for the others.
TEST(CheckPaths, ChoosesAPathNoSlowerThanScalar) {
    const CheckCalibration calibration = choose_check_path();
    std::printf("check paths, time relative to scalar (median of %u rounds, %.0f us in all):",
                calibration.rounds, calibration.microseconds);
    for (uint32_t p = 0; p < kCheckPaths; p++)
        std::printf(" %s %.2f", check_path_name(CheckPath(p)), calibration.relative_time[p]);
    std::printf("; chosen: %s\n", chosen_check_path_name());
    EXPECT_EQ(chosen_check_path(), calibration.chosen);
    EXPECT_EQ(chosen_block_check, block_check_for(calibration.chosen));
    ASSERT_NE(chosen_block_check, nullptr);
    EXPECT_EQ(calibration.relative_time[0], 1.0);
    for (uint32_t p = 1; p < kCheckPaths; p++) {
        if (block_check_for(CheckPath(p)) == nullptr) {
            EXPECT_EQ(calibration.relative_time[p], 0.0);
            EXPECT_NE(calibration.chosen, CheckPath(p));
        } else if (calibration.rounds > 0) {
            EXPECT_GT(calibration.relative_time[p], 0.0);
        }
    }
    if (calibration.chosen != CheckPath::scalar) {
        EXPECT_LE(calibration.relative_time[size_t(calibration.chosen)], 0.97);
    }
    for (uint32_t version : {kFormatVersion1, kFormatVersion2}) {
        for (double rate : {0.01, 0.001}) {
            Filter f(10000, rate, version);
            const bool applies =
                version == kFormatVersion2 && f.parameters.hashes <= kPathMaxHashes;
            EXPECT_EQ(f.ref().check, applies ? chosen_block_check : nullptr)
                << version << " " << rate;
        }
    }
}

TEST(CheckPaths, SetAndName) {
    const CheckPath before = chosen_check_path();
    for (uint32_t p = 0; p < kCheckPaths; p++) {
        const CheckPath path = CheckPath(p);
        const bool available = block_check_for(path) != nullptr;
        EXPECT_EQ(set_check_path(path), available) << check_path_name(path);
        if (available) {
            EXPECT_EQ(chosen_check_path(), path);
            EXPECT_STREQ(chosen_check_path_name(), check_path_name(path));
        }
    }
    EXPECT_NE(block_check_for(CheckPath::scalar), nullptr);
    EXPECT_STREQ(check_path_name(CheckPath::scalar), "scalar");
    EXPECT_STREQ(check_path_name(CheckPath::avx2), "avx2");
    EXPECT_STREQ(check_path_name(CheckPath::avx512), "avx512");
    EXPECT_TRUE(set_check_path(before));
}

TEST(Layout, EmptyFilterContainsNothing) {
    Filter f(10000, 0.01);
    SeedKey key;
    for (uint64_t i = 0; i < 20000; i++) EXPECT_FALSE(f.ref().contains(key.hash(i)));
}

TEST(Layout, LittleEndianHelpers) {
    uint8_t buffer[16] = {};
    store_u64(buffer + 1, 0x0102030405060708ull);
    const uint8_t want64[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    EXPECT_EQ(std::memcmp(buffer + 1, want64, 8), 0);
    EXPECT_EQ(load_u64(buffer + 1), 0x0102030405060708ull);
    store_u32(buffer + 3, 0xa1b2c3d4u);
    const uint8_t want32[4] = {0xd4, 0xc3, 0xb2, 0xa1};
    EXPECT_EQ(std::memcmp(buffer + 3, want32, 4), 0);
    EXPECT_EQ(load_u32(buffer + 3), 0xa1b2c3d4u);
    store_u16(buffer + 7, 0xbeef);
    EXPECT_EQ(buffer[7], 0xef);
    EXPECT_EQ(buffer[8], 0xbe);
    EXPECT_EQ(load_u16(buffer + 7), 0xbeef);
}

// ---------------------------------------------------------------------------------------------
// The article's scenario: no false negatives, and the measured false-positive rate within 1.05 x p.

struct SeedCase {
    uint64_t capacity;
    double error_rate;
    uint64_t probes;
    uint32_t version;
};

class SeedScenario : public ::testing::TestWithParam<SeedCase> {};

TEST_P(SeedScenario, NoFalseNegativesAndRateWithinBound) {
    const SeedCase c = GetParam();
    Filter f(c.capacity, c.error_rate, c.version);
    FilterRef ref = f.ref();
    SeedKey key;
    for (uint64_t i = 0; i < c.capacity; i++) ref.add(key.hash(i, c.version));
    add_inserted(f.bytes.data(), c.capacity);

    EXPECT_TRUE(f.contains("user7@mail.com"));
    if (c.capacity == 1000000 && c.error_rate == 0.01) {
        EXPECT_FALSE(f.contains("ghost@mail.com"));
    }

    uint64_t false_negatives = 0;
    for (uint64_t i = 0; i < c.capacity; i++)
        false_negatives += !ref.contains(key.hash(i, c.version));
    EXPECT_EQ(false_negatives, 0u);

    // Keys of the same shape that were never added.
    uint64_t false_positives = 0;
    for (uint64_t i = c.capacity; i < c.capacity + c.probes; i++)
        false_positives += ref.contains(key.hash(i, c.version));
    const double measured = double(false_positives) / double(c.probes);
    EXPECT_LE(measured, 1.05 * c.error_rate);

    Header header = f.header();
    EXPECT_EQ(header.inserted, c.capacity);
    Statistics stats = statistics(f.bytes.data(), header);
    EXPECT_NEAR(stats.estimated_count, double(c.capacity), 0.01 * double(c.capacity));
    // The estimate is the exact expectation for these bits; the measured rate differs from it
    // only by sampling noise (4 binomial standard deviations allowed).
    const double sigma = std::sqrt(stats.estimated_error_rate / double(c.probes));
    EXPECT_NEAR(measured, stats.estimated_error_rate, 4 * sigma);
    EXPECT_GT(stats.fill, 0.4);
    EXPECT_LT(stats.fill, 0.6);
    std::printf(
        "v%u n=%llu p=%g k=%u blocks=%u x %u bits: measured %.6f (%.4f x p) over %llu probes, "
        "estimated %.6f, estimated count %.0f\n",
        c.version, (unsigned long long)c.capacity, c.error_rate, f.parameters.hashes,
        f.parameters.blocks, 1u << f.parameters.block_log2, measured, measured / c.error_rate,
        (unsigned long long)c.probes, stats.estimated_error_rate, stats.estimated_count);
}

INSTANTIATE_TEST_SUITE_P(Rates, SeedScenario,
                         ::testing::Values(SeedCase{1000000, 0.01, 1000000, kFormatVersion2},
                                           SeedCase{200000, 0.001, 1000000, kFormatVersion2},
                                           SeedCase{200000, 0.05, 1000000, kFormatVersion2},
                                           SeedCase{1000000, 0.01, 1000000, kFormatVersion1},
                                           SeedCase{200000, 0.001, 1000000, kFormatVersion1}),
                         [](const ::testing::TestParamInfo<SeedCase> &info) {
                             return "p" + std::to_string(info.index);
                         });

// Error rates from 0.9 down to 0.0002 at 200000 keys. statistics() gives the exact expected rate
// for the bits a filter holds, so the bound is checked without sampling noise, and the measured
// rate must agree with it. (Above about 0.6 the article's formula for k rounds to 0; the one hash
// used instead gets the bits it needs, see size_filter.)
TEST(Membership, ErrorRateSweep) {
    const uint64_t n = 200000, probes = 400000;
    for (uint32_t version : {kFormatVersion1, kFormatVersion2})
        for (double p : {0.9, 0.7, 0.65, 0.5, 0.3, 0.2, 0.1, 0.07, 0.03, 0.02, 0.015, 0.008, 0.005,
                         0.003, 0.002, 0.0007, 0.0002}) {
            Filter f(n, p, version);
            FilterRef ref = f.ref();
            SeedKey key;
            for (uint64_t i = 0; i < n; i++) ref.add(key.hash(i, version));
            Statistics s = statistics(f.bytes.data(), f.header());
            EXPECT_LE(s.estimated_error_rate, 1.05 * p) << p;
            uint64_t false_positives = 0;
            for (uint64_t i = n; i < n + probes; i++)
                false_positives += ref.contains(key.hash(i, version));
            const double measured = double(false_positives) / double(probes);
            EXPECT_NEAR(
                measured, s.estimated_error_rate,
                4 * std::sqrt(s.estimated_error_rate / double(probes)) + 2.0 / double(probes))
                << p << " v" << version;
            EXPECT_NEAR(s.estimated_count, double(n), 0.01 * double(n)) << p << " v" << version;
        }
}

// The layers of a growing index: k capped at 8, so that blocks stay 1 kB. The rate measured over
// absent keys stays within 1.05 x the rate asked for, at a few more bits a key than the optimum.
TEST(Sizing, CappedHashes) {
    const uint64_t n = 200000, probes = 2000000;
    for (double p : {0.0025, 0.0005, 0.0001}) {
        Parameters capped, optimal;
        ASSERT_EQ(size_filter_capped(n, p, 8, &capped), Status::ok);
        ASSERT_EQ(size_filter(n, p, &optimal), Status::ok);
        EXPECT_EQ(capped.hashes, 8u) << p;
        EXPECT_GT(optimal.hashes, 8u) << p;
        EXPECT_LE(capped.block_bytes(), 1024u) << p;
        EXPECT_LE(double(capped.bits()), 1.2 * double(optimal.bits())) << p;
        capped.version = kFormatVersion2;
        std::vector<uint8_t> bytes(capped.encoded_bytes(), 0);
        write_empty(capped, bytes.data());
        FilterRef ref = FilterRef::of(bytes.data(), capped);
        SeedKey key;
        for (uint64_t i = 0; i < n; i++) ref.add(key.hash(i, kFormatVersion2));
        uint64_t false_positives = 0;
        for (uint64_t i = n; i < n + probes; i++)
            false_positives += ref.contains(key.hash(i, kFormatVersion2));
        const double measured = double(false_positives) / double(probes);
        EXPECT_LE(measured, 1.05 * p + 4 * std::sqrt(p / double(probes))) << p;
    }
    // Within the cap, the parameters are size_filter's.
    Parameters a, b;
    ASSERT_EQ(size_filter_capped(1000, 0.01, 8, &a), Status::ok);
    ASSERT_EQ(size_filter(1000, 0.01, &b), Status::ok);
    EXPECT_EQ(a.hashes, b.hashes);
    EXPECT_EQ(a.blocks, b.blocks);
    EXPECT_EQ(a.block_log2, b.block_log2);
}

// Keys of other lengths go through other XXH3 code paths: 8-byte integers and 300-byte strings.
TEST(Membership, OtherKeyShapes) {
    const uint64_t n = 100000, probes = 1000000;
    for (uint32_t version : {kFormatVersion1, kFormatVersion2})
        for (int shape = 0; shape < 2; shape++) {
            Filter f(n, 0.01, version);
            FilterRef ref = f.ref();
            std::string long_key(300, 'k');
            auto hash = [&](uint64_t i) {
                if (shape == 0) {
                    uint8_t bytes[8];
                    put_u64(bytes, i * 0x9e3779b97f4a7c15ull);
                    return ref.hash(bytes, 8);
                }
                std::memcpy(&long_key[150], &i, 8);
                return ref.hash(long_key.data(), long_key.size());
            };
            for (uint64_t i = 0; i < n; i++) ref.add(hash(i));
            uint64_t false_negatives = 0, false_positives = 0;
            for (uint64_t i = 0; i < n; i++) false_negatives += !ref.contains(hash(i));
            for (uint64_t i = n; i < n + probes; i++) false_positives += ref.contains(hash(i));
            EXPECT_EQ(false_negatives, 0u) << shape;
            const double measured = double(false_positives) / double(probes);
            EXPECT_LE(measured, 1.05 * 0.01) << shape;
            std::printf("v%u key shape %s: measured %.6f\n", version,
                        shape == 0 ? "8-byte" : "300-byte", measured);
        }
}

// ---------------------------------------------------------------------------------------------
// The header format and validation

TEST(Format, ExactHeaderBytes) {
    Filter f(1000, 0.01);
    ASSERT_EQ(f.parameters.hashes, 7u);
    ASSERT_EQ(f.parameters.block_log2, 12u);
    ASSERT_EQ(f.parameters.blocks, 3u);
    ASSERT_EQ(f.bytes.size(), 36u + 3 * 512);
    const uint8_t want[36] = {
        'B',  'L',  'O',  'M',                           // magic
        0x02,                                            // version 2
        0x0c,                                            // block_log2 = 12
        0x07, 0x00,                                      // hashes = 7
        0x03, 0x00, 0x00, 0x00,                          // blocks = 3
        0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // capacity = 1000
        0x7b, 0x14, 0xae, 0x47, 0xe1, 0x7a, 0x84, 0x3f,  // error_rate = 0.01 (0x3f847ae147ae147b)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // inserted = 0
    };
    EXPECT_EQ(std::memcmp(f.bytes.data(), want, 36), 0);
    for (size_t i = kHeaderBytes; i < f.bytes.size(); i++) ASSERT_EQ(f.bytes[i], 0) << i;

    write_inserted(f.bytes.data(), 0x0102030405060708ull);
    const uint8_t inserted[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    EXPECT_EQ(std::memcmp(f.bytes.data() + kOffsetInserted, inserted, 8), 0);
    EXPECT_EQ(read_inserted(f.bytes.data()), 0x0102030405060708ull);
    EXPECT_EQ(f.header().inserted, 0x0102030405060708ull);

    // The article's filter: blocks = 2352 = 0x930, capacity = 1000000 = 0xf4240.
    Filter seed(1000000, 0.01);
    const uint8_t seed_fields[] = {0x0c, 0x07, 0x00, 0x30, 0x09, 0x00, 0x00, 0x40,
                                   0x42, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(std::memcmp(seed.bytes.data() + kOffsetBlockLog2, seed_fields, sizeof seed_fields),
              0);
}

TEST(Format, WriteEmptyThenValidate) {
    const std::pair<uint64_t, double> cases[] = {
        {1, 0.5},      {1, 0.01},    {1000, 0.01},   {1000, 0.001},   {600, 0.003},
        {12345, 1e-6}, {10, 1e-300}, {200000, 0.05}, {1000000, 0.01},
    };
    for (const auto &c : cases) {
        Filter f(c.first, c.second);
        EXPECT_EQ(std::vector<uint8_t>(f.bytes.begin(), f.bytes.begin() + kHeaderBytes),
                  header_by_hand(f.parameters, 0));
        Header header = f.header();
        EXPECT_EQ(header.parameters.capacity, c.first);
        EXPECT_EQ(header.parameters.error_rate, c.second);
        EXPECT_EQ(header.parameters.hashes, f.parameters.hashes);
        EXPECT_EQ(header.parameters.block_log2, f.parameters.block_log2);
        EXPECT_EQ(header.parameters.blocks, f.parameters.blocks);
        EXPECT_EQ(header.inserted, 0u);
        // The slice path: only the header is at hand.
        Header sliced;
        EXPECT_EQ(read_header(f.bytes.data(), kHeaderBytes, f.bytes.size(), &sliced), Status::ok);
        EXPECT_EQ(sliced.parameters.blocks, f.parameters.blocks);
    }
}

class Validation : public ::testing::Test {
protected:
    Filter f{1000, 0.01};
    Status check() {
        Header header;
        return validate(f.bytes.data(), f.bytes.size(), &header);
    }
};

TEST_F(Validation, Truncated) {
    Header header;
    EXPECT_EQ(validate(f.bytes.data(), 0, &header), Status::truncated);
    EXPECT_EQ(validate(f.bytes.data(), 1, &header), Status::truncated);
    EXPECT_EQ(validate(f.bytes.data(), kHeaderBytes - 1, &header), Status::truncated);
    EXPECT_EQ(validate(nullptr, 0, &header), Status::truncated);
    // Fewer header bytes at hand than the header, or a total shorter than one.
    EXPECT_EQ(read_header(f.bytes.data(), kHeaderBytes - 1, f.bytes.size(), &header),
              Status::truncated);
    EXPECT_EQ(read_header(f.bytes.data(), kHeaderBytes, kHeaderBytes - 1, &header),
              Status::truncated);
    // A bare header that claims 3 blocks.
    EXPECT_EQ(validate(f.bytes.data(), kHeaderBytes, &header), Status::bad_length);
}

TEST_F(Validation, BadMagic) {
    for (size_t i = 0; i < 4; i++) {
        Filter g(1000, 0.01);
        g.bytes[kOffsetMagic + i] ^= 0x20;  // "bLOM", "BlOM", ...
        Header header;
        EXPECT_EQ(validate(g.bytes.data(), g.bytes.size(), &header), Status::bad_magic) << i;
    }
    std::memset(f.bytes.data(), 0, kHeaderBytes);
    EXPECT_EQ(check(), Status::bad_magic);
}

TEST_F(Validation, UnsupportedVersion) {
    for (int version : {0, 3, 0x81, 255}) {
        f.bytes[kOffsetVersion] = uint8_t(version);
        EXPECT_EQ(check(), Status::unsupported_version) << version;
    }
}

TEST_F(Validation, BothVersionsAreValid) {
    for (uint32_t version : {kFormatVersion1, kFormatVersion2}) {
        f.bytes[kOffsetVersion] = uint8_t(version);
        Header header;
        ASSERT_EQ(validate(f.bytes.data(), f.bytes.size(), &header), Status::ok) << version;
        EXPECT_EQ(header.parameters.version, version);
    }
}

TEST_F(Validation, BadBlockSize) {
    for (int log2 : {0, 3, 11, 25, 64, 255}) {
        f.bytes[kOffsetBlockLog2] = uint8_t(log2);
        EXPECT_EQ(check(), Status::bad_block_size) << log2;
    }
}

TEST_F(Validation, BadParameters) {
    put_u64(f.bytes.data() + kOffsetCapacity, 0);
    EXPECT_EQ(check(), Status::bad_parameters);
    put_u64(f.bytes.data() + kOffsetCapacity, 1000);
    ASSERT_EQ(check(), Status::ok);

    // error_rate bit patterns: 0, -0, 1, -0.01, +-inf, quiet, negative, signalling and
    // payload-carrying NaNs.
    const uint64_t bad_rates[] = {
        0x0000000000000000ull, 0x8000000000000000ull, 0x3ff0000000000000ull, 0xbf847ae147ae147bull,
        0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull, 0xfff8000000000000ull,
        0x7ff0000000000001ull, 0x7fffffffffffffffull, 0xffffffffffffffffull, 0x4000000000000000ull,
    };
    for (uint64_t raw : bad_rates) {
        put_u64(f.bytes.data() + kOffsetErrorRate, raw);
        EXPECT_EQ(check(), Status::bad_parameters) << std::hex << raw;
    }
}

TEST_F(Validation, TooLarge) {
    // A billion keys at 1% would need 1.2 GB.
    put_u64(f.bytes.data() + kOffsetCapacity, 1000000000);
    EXPECT_EQ(check(), Status::too_large);
    put_u64(f.bytes.data() + kOffsetCapacity, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(check(), Status::too_large);
}

TEST_F(Validation, InconsistentSizing) {
    const std::vector<uint8_t> good = f.bytes;
    auto reset = [&] { f.bytes = good; };
    store_u16(f.bytes.data() + kOffsetHashes, 6);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    store_u16(f.bytes.data() + kOffsetHashes, 8);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    store_u16(f.bytes.data() + kOffsetHashes, 0x0107);  // high byte must count too
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    f.bytes[kOffsetBlockLog2] = 13;  // in range, but not what the parameters give
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    store_u32(f.bytes.data() + kOffsetBlocks, 2);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    store_u32(f.bytes.data() + kOffsetBlocks, 4);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    store_u32(f.bytes.data() + kOffsetBlocks, 0x01000003);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    // Parameters from a different filter, with this filter's sizes: 2000 keys need 5 blocks.
    put_u64(f.bytes.data() + kOffsetCapacity, 2000);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    put_double(f.bytes.data() + kOffsetErrorRate, 0.02);
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    put_double(f.bytes.data() + kOffsetErrorRate, std::numeric_limits<double>::denorm_min());
    EXPECT_EQ(check(), Status::inconsistent_sizing);
    reset();
    EXPECT_EQ(check(), Status::ok);
}

TEST_F(Validation, BadLength) {
    Header header;
    const size_t size = f.bytes.size();
    f.bytes.resize(size + 512, 0);
    EXPECT_EQ(validate(f.bytes.data(), size + 1, &header), Status::bad_length);
    EXPECT_EQ(validate(f.bytes.data(), size + 512, &header), Status::bad_length);
    EXPECT_EQ(validate(f.bytes.data(), size - 1, &header), Status::bad_length);
    EXPECT_EQ(validate(f.bytes.data(), size - 512, &header), Status::bad_length);
    EXPECT_EQ(read_header(f.bytes.data(), kHeaderBytes, size + 1, &header), Status::bad_length);
    EXPECT_EQ(validate(f.bytes.data(), size, &header), Status::ok);
}

TEST_F(Validation, AnyBitsAndCounterAreValid) {
    std::mt19937_64 random(7);
    for (size_t i = kHeaderBytes; i < f.bytes.size(); i++) f.bytes[i] = uint8_t(random());
    put_u64(f.bytes.data() + kOffsetInserted, std::numeric_limits<uint64_t>::max());
    Header header;
    ASSERT_EQ(check(), Status::ok);
    ASSERT_EQ(validate(f.bytes.data(), f.bytes.size(), &header), Status::ok);
    EXPECT_EQ(header.inserted, std::numeric_limits<uint64_t>::max());
}

TEST(Format, StatusMessages) {
    std::set<std::string> seen;
    for (Status s : kAllStatuses) {
        const char *message = status_message(s);
        ASSERT_NE(message, nullptr);
        EXPECT_GT(std::strlen(message), 1u);
        EXPECT_TRUE(seen.insert(message).second) << message;
    }
    EXPECT_STREQ(status_message(static_cast<Status>(999)), "unknown status");
}

// ---------------------------------------------------------------------------------------------
// Union

TEST(Union, BitsOrAndCountersAdd) {
    Filter a(1000, 0.01), b(1000, 0.01);
    for (int i = 0; i < 500; i++) a.add("user" + std::to_string(i) + "@mail.com");
    for (int i = 500; i < 1000; i++) b.add("user" + std::to_string(i) + "@mail.com");
    write_inserted(a.bytes.data(), 500);
    write_inserted(b.bytes.data(), 500);
    ASSERT_EQ(check_compatible(a.header(), b.header()), Status::ok);

    std::vector<uint8_t> want = a.bytes;
    for (size_t i = kHeaderBytes; i < want.size(); i++) want[i] = a.bytes[i] | b.bytes[i];
    put_u64(want.data() + kOffsetInserted, 1000);

    const std::vector<uint8_t> b_before = b.bytes;
    union_bits(a.bytes.data(), a.bytes.data(), b.bytes.data(), 0, a.bit_bytes());
    union_inserted(a.bytes.data(), b.bytes.data());
    EXPECT_EQ(a.bytes, want);
    EXPECT_EQ(b.bytes, b_before);  // the source is only read
    EXPECT_EQ(a.header().inserted, 1000u);
    for (int i = 0; i < 1000; i++)
        EXPECT_TRUE(a.contains("user" + std::to_string(i) + "@mail.com")) << i;
}

TEST(Union, InChunksEqualsWhole) {
    Filter a(100000, 0.01), b(100000, 0.01), whole(100000, 0.01);
    SeedKey key;
    for (uint64_t i = 0; i < 50000; i++) a.ref().add(key.hash(i));
    for (uint64_t i = 50000; i < 100000; i++) b.ref().add(key.hash(i));
    whole.bytes = a.bytes;
    union_bits(whole.bytes.data(), whole.bytes.data(), b.bytes.data(), 0, whole.bit_bytes());
    const uint64_t chunk = 4099;  // not a multiple of anything in the format
    for (uint64_t begin = 0; begin < a.bit_bytes(); begin += chunk)
        union_bits(a.bytes.data(), a.bytes.data(), b.bytes.data(), begin,
                   std::min<uint64_t>(begin + chunk, a.bit_bytes()));
    EXPECT_EQ(a.bytes, whole.bytes);
    // An empty range changes nothing.
    union_bits(a.bytes.data(), a.bytes.data(), b.bytes.data(), 10, 10);
    EXPECT_EQ(a.bytes, whole.bytes);
    uint64_t false_negatives = 0;
    for (uint64_t i = 0; i < 100000; i++) false_negatives += !a.ref().contains(key.hash(i));
    EXPECT_EQ(false_negatives, 0u);
}

TEST(Union, WithItself) {
    Filter a(1000, 0.01);
    for (int i = 0; i < 700; i++) a.add("k" + std::to_string(i));
    write_inserted(a.bytes.data(), 700);
    const std::vector<uint8_t> before = a.bytes;
    union_bits(a.bytes.data(), a.bytes.data(), a.bytes.data(), 0, a.bit_bytes());
    union_inserted(a.bytes.data(), a.bytes.data());
    EXPECT_TRUE(
        std::equal(before.begin() + kHeaderBytes, before.end(), a.bytes.begin() + kHeaderBytes));
    EXPECT_EQ(read_inserted(a.bytes.data()), 1400u);
}

TEST(Union, SaturatingCounters) {
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    Filter a(10, 0.01), b(10, 0.01);
    add_inserted(a.bytes.data(), 5);
    add_inserted(a.bytes.data(), 7);
    EXPECT_EQ(read_inserted(a.bytes.data()), 12u);
    add_inserted(a.bytes.data(), 0);
    EXPECT_EQ(read_inserted(a.bytes.data()), 12u);
    write_inserted(a.bytes.data(), max - 5);
    add_inserted(a.bytes.data(), 5);
    EXPECT_EQ(read_inserted(a.bytes.data()), max);
    write_inserted(a.bytes.data(), max - 5);
    add_inserted(a.bytes.data(), 6);
    EXPECT_EQ(read_inserted(a.bytes.data()), max);
    add_inserted(a.bytes.data(), max);
    EXPECT_EQ(read_inserted(a.bytes.data()), max);

    write_inserted(a.bytes.data(), max / 2 + 1);
    write_inserted(b.bytes.data(), max / 2 + 1);
    union_inserted(a.bytes.data(), b.bytes.data());
    EXPECT_EQ(read_inserted(a.bytes.data()), max);
    write_inserted(a.bytes.data(), max / 2);
    write_inserted(b.bytes.data(), max / 2);
    union_inserted(a.bytes.data(), b.bytes.data());
    EXPECT_EQ(read_inserted(a.bytes.data()), max - 1);
}

TEST(Union, CheckCompatible) {
    Header a = Filter(1000, 0.01).header();
    EXPECT_EQ(check_compatible(a, a), Status::ok);
    EXPECT_EQ(check_compatible(a, Filter(1000, 0.01).header()), Status::ok);
    EXPECT_EQ(check_compatible(a, Filter(1001, 0.01).header()), Status::capacity_mismatch);
    EXPECT_EQ(check_compatible(a, Filter(1000, 0.02).header()), Status::error_rate_mismatch);
    // Capacity is reported first when both differ.
    EXPECT_EQ(check_compatible(a, Filter(2000, 0.02).header()), Status::capacity_mismatch);
    // Same sizes, different error_rate bits: 0.1 + 0.2 != 0.3.
    Header x = Filter(1000, 0.1 + 0.2).header(), y = Filter(1000, 0.3).header();
    ASSERT_EQ(x.parameters.blocks, y.parameters.blocks);
    ASSERT_EQ(x.parameters.hashes, y.parameters.hashes);
    EXPECT_EQ(check_compatible(x, y), Status::error_rate_mismatch);
    // Filters of the two versions place a key's bits differently.
    Header v1 = Filter(1000, 0.01, kFormatVersion1).header();
    EXPECT_EQ(check_compatible(a, v1), Status::version_mismatch);
    EXPECT_EQ(check_compatible(v1, v1), Status::ok);
    // The inserted counter does not matter.
    Header z = a;
    z.inserted = 12345;
    EXPECT_EQ(check_compatible(a, z), Status::ok);
}

// ---------------------------------------------------------------------------------------------
// Statistics

TEST(Statistics, Empty) {
    for (auto c : {std::make_pair(1ull, 0.5), std::make_pair(1000ull, 0.01),
                   std::make_pair(100000ull, 0.001)}) {
        Filter f(c.first, c.second);
        Statistics s = statistics(f.bytes.data(), f.header());
        EXPECT_EQ(s.bits_set, 0u);
        EXPECT_EQ(s.fill, 0.0);
        EXPECT_EQ(s.estimated_count, 0.0);
        EXPECT_EQ(s.estimated_error_rate, 0.0);
    }
}

TEST(Statistics, Full) {
    Filter f(1000, 0.01);
    std::fill(f.bytes.begin() + kHeaderBytes, f.bytes.end(), 0xff);
    Statistics s = statistics(f.bytes.data(), f.header());
    EXPECT_EQ(s.bits_set, f.parameters.bits());
    EXPECT_EQ(s.fill, 1.0);
    EXPECT_EQ(s.estimated_error_rate, 1.0);
    EXPECT_TRUE(std::isinf(s.estimated_count) && s.estimated_count > 0);
    SeedKey key;
    for (uint64_t i = 0; i < 1000; i++) EXPECT_TRUE(f.ref().contains(key.hash(i)));
}

TEST(Statistics, Filled) {
    for (uint64_t n : {100ull, 10000ull, 300000ull}) {
        Filter f(n, 0.01);
        SeedKey key;
        for (uint64_t i = 0; i < n; i++) f.ref().add(key.hash(i));
        Statistics s = statistics(f.bytes.data(), f.header());
        EXPECT_EQ(s.bits_set, popcount_bytes(f.bytes.data() + kHeaderBytes, f.bit_bytes()));
        EXPECT_DOUBLE_EQ(s.fill, double(s.bits_set) / double(f.parameters.bits()));
        EXPECT_NEAR(s.estimated_count, double(n), 0.03 * double(n) + 3) << n;
        // With the filter at capacity the expected rate is near p (under it, for small filters
        // rounded up to whole blocks).
        EXPECT_LE(s.estimated_error_rate, 1.05 * 0.01) << n;
        EXPECT_GT(s.estimated_error_rate, 0.0);
        // Half full: about twice the count, a much higher rate.
        for (uint64_t i = n; i < 2 * n; i++) f.ref().add(key.hash(i));
        Statistics more = statistics(f.bytes.data(), f.header());
        EXPECT_NEAR(more.estimated_count, double(2 * n), 0.03 * double(2 * n) + 3) << n;
        EXPECT_GT(more.estimated_error_rate, 5 * s.estimated_error_rate) << n;
    }
}

// statistics() as it was computed before StatisticsSum, over a whole filter: the sum must give
// these numbers bit for bit.
Statistics statistics_whole(const uint8_t *data, const Header &header) {
    Statistics stats;
    const Parameters &p = header.parameters;
    const double k = p.hashes, block_bits = double(uint64_t(1) << p.block_log2);
    const uint64_t words = p.block_bytes() / 8;
    double error_sum = 0, count_sum = 0;
    for (uint32_t b = 0; b < p.blocks; b++) {
        const uint8_t *block = data + block_offset(b, p.block_log2);
        uint64_t set = 0;
        for (uint64_t w = 0; w < words; w++) {
            uint64_t word;
            std::memcpy(&word, block + 8 * w, 8);
            set += uint64_t(__builtin_popcountll(word));
        }
        stats.bits_set += set;
        double fill = double(set) / block_bits;
        error_sum += std::pow(fill, k);
        count_sum += set == uint64_t(block_bits) ? std::numeric_limits<double>::infinity()
                                                 : -(block_bits / k) * std::log1p(-fill);
    }
    stats.fill = double(stats.bits_set) / double(p.bits());
    stats.estimated_error_rate = error_sum / p.blocks;
    stats.estimated_count = count_sum;
    return stats;
}

// The same doubles, bit for bit (infinities included).
void expect_same_statistics(const Statistics &a, const Statistics &b, const std::string &what) {
    EXPECT_EQ(a.bits_set, b.bits_set) << what;
    EXPECT_EQ(std::memcmp(&a.fill, &b.fill, sizeof(double)), 0) << what;
    EXPECT_EQ(std::memcmp(&a.estimated_count, &b.estimated_count, sizeof(double)), 0) << what;
    EXPECT_EQ(std::memcmp(&a.estimated_error_rate, &b.estimated_error_rate, sizeof(double)), 0)
        << what;
}

// Slices of every size an index gives (a page's bytes, 4096 of a block spanning pages, the
// shorter last page) and odd ones, over filters of small and spanning blocks, empty, filled,
// over-filled and with full blocks.
TEST(Statistics, SumOfSlices) {
    struct Case {
        uint64_t capacity;
        double error_rate;
        uint64_t keys;
        bool full_block;
    };
    for (const Case c : {Case{1, 0.5, 0, false}, Case{1000, 0.01, 0, false},
                         Case{1000, 0.01, 1000, false}, Case{50000, 0.01, 150000, true},
                         Case{20000, 1e-6, 20000, false}, Case{3000, 1e-9, 9000, true}}) {
        Filter f(c.capacity, c.error_rate);
        SeedKey key;
        for (uint64_t i = 0; i < c.keys; i++) f.ref().add(key.hash(i));
        if (c.full_block)
            std::fill(f.bytes.begin() + kHeaderBytes,
                      f.bytes.begin() + kHeaderBytes + f.parameters.block_bytes(), 0xff);
        const Header header = f.header();
        const Statistics reference = statistics_whole(f.bytes.data(), header);
        const std::string what = std::to_string(c.capacity) + " at " +
                                 std::to_string(c.error_rate) + ", " + std::to_string(c.keys) +
                                 " keys, block " + std::to_string(f.parameters.block_bytes());
        expect_same_statistics(statistics(f.bytes.data(), header), reference, what);
        const uint8_t *bits = f.bytes.data() + kHeaderBytes;
        for (uint64_t slice : {uint64_t(1), uint64_t(7), uint64_t(8), uint64_t(4096),
                               uint64_t(8152), f.parameters.block_bytes(), uint64_t(100003)}) {
            StatisticsSum sum(f.parameters);
            for (uint64_t begin = 0; begin < f.bit_bytes(); begin += slice)
                sum.add(bits + begin, std::min(slice, f.bit_bytes() - begin));
            expect_same_statistics(sum.result(), reference,
                                   what + ", slices of " + std::to_string(slice));
        }
    }
}

// A page never written adds what zeros add.
TEST(Statistics, SumOfZeros) {
    Filter f(20000, 1e-6);
    SeedKey key;
    for (uint64_t i = 0; i < 5000; i++) f.ref().add(key.hash(i));
    uint8_t *bits = f.bytes.data() + kHeaderBytes;
    // The middle third zeroed, from an offset inside a block.
    const uint64_t zero_begin = f.bit_bytes() / 3 + 5, zero_end = 2 * f.bit_bytes() / 3 + 11;
    std::fill(bits + zero_begin, bits + zero_end, 0);
    const Statistics reference = statistics_whole(f.bytes.data(), f.header());
    StatisticsSum sum(f.parameters);
    sum.add(bits, zero_begin);
    for (uint64_t begin = zero_begin; begin < zero_end; begin += 4096)
        sum.add_zeros(std::min<uint64_t>(4096, zero_end - begin));
    sum.add(bits + zero_end, f.bit_bytes() - zero_end);
    expect_same_statistics(sum.result(), reference, "a third zeros");
    StatisticsSum empty(f.parameters);
    empty.add_zeros(f.bit_bytes());
    const Statistics none = empty.result();
    EXPECT_EQ(none.bits_set, 0u);
    EXPECT_EQ(none.fill, 0.0);
    EXPECT_EQ(none.estimated_count, 0.0);
    EXPECT_EQ(none.estimated_error_rate, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Hex text

TEST(Hex, Encode) {
    const uint8_t data[] = {0x00, 0xab, 0xff, 0x10, 0x9c};
    char out[text_length(sizeof data) + 1];
    std::memset(out, '#', sizeof out);
    encode_hex(data, sizeof data, out);
    EXPECT_EQ(std::string(out, text_length(sizeof data)), "\\x00abff109c");
    EXPECT_EQ(out[text_length(sizeof data)], '#');  // nothing written past the text
    char empty[3] = {'#', '#', '#'};
    encode_hex(data, 0, empty);
    EXPECT_EQ(std::string(empty, 3), "\\x#");
    EXPECT_EQ(text_length(0), 2u);
    EXPECT_EQ(text_length(548), 1098u);
}

TEST(Hex, RoundTripOfAFilter) {
    Filter f(1000, 0.01);
    for (int i = 0; i < 1000; i++) f.add("user" + std::to_string(i) + "@mail.com");
    std::string text(text_length(f.bytes.size()), '\0');
    encode_hex(f.bytes.data(), f.bytes.size(), &text[0]);
    EXPECT_EQ(text.substr(0, 12), "\\x424c4f4d02");
    std::vector<uint8_t> decoded((text.size() - 2) / 2 + 1, 0xee);
    ASSERT_TRUE(decode_hex(text.data(), text.size(), decoded.data()));
    EXPECT_EQ(decoded.back(), 0xee);  // nothing written past (length - 2) / 2 bytes
    decoded.pop_back();
    EXPECT_EQ(decoded, f.bytes);
    Header header;
    EXPECT_EQ(validate(decoded.data(), decoded.size(), &header), Status::ok);
}

TEST(Hex, RandomRoundTripAndCase) {
    std::mt19937_64 random(11);
    for (size_t length : {0u, 1u, 2u, 17u, 1000u}) {
        std::vector<uint8_t> data(length);
        for (auto &b : data) b = uint8_t(random());
        std::string text(text_length(length), '\0');
        encode_hex(data.data(), length, &text[0]);
        for (size_t i = 2; i < text.size(); i++) {
            ASSERT_TRUE(std::isdigit((unsigned char)text[i]) || (text[i] >= 'a' && text[i] <= 'f'));
        }
        std::vector<uint8_t> back(length);
        ASSERT_TRUE(decode_hex(text.data(), text.size(), back.data()));
        EXPECT_EQ(back, data);
        std::string upper = text;
        for (size_t i = 2; i < upper.size(); i++)
            upper[i] = char(std::toupper((unsigned char)upper[i]));
        std::fill(back.begin(), back.end(), 0);
        ASSERT_TRUE(decode_hex(upper.data(), upper.size(), back.data()));
        EXPECT_EQ(back, data);
    }
}

TEST(Hex, BadInputs) {
    uint8_t out[16];
    const std::string bad[] = {
        "",        "\\",     "x",          "\\X00", "x00",   "00",     "/x00",
        "\\x0",    "\\x000", "\\x0g",      "\\xg0", "\\x 0", "\\x0 ",  "\\x00 ",
        "\\x-1",   "\\x:0",  "\\x@0",      "\\xG0", "\\x`0", "\\x0\n", std::string("\\x0\0", 4),
        "\\\\x00", " \\x00", "\\x00\\x00",
    };
    for (const std::string &text : bad)
        EXPECT_FALSE(decode_hex(text.data(), text.size(), out)) << text;
    EXPECT_TRUE(decode_hex("\\x", 2, out));
    EXPECT_TRUE(decode_hex("\\xAbCd", 6, out));
    EXPECT_EQ(out[0], 0xab);
    EXPECT_EQ(out[1], 0xcd);
    // An odd count followed by more digits in memory: the count alone must reject it.
    EXPECT_FALSE(decode_hex("\\x0123", 5, out));
    EXPECT_FALSE(decode_hex("\\xab", 3, out));
    // A valid prefix of a longer string: only `length` characters count.
    EXPECT_TRUE(decode_hex("\\x12zz", 4, out));
    EXPECT_EQ(out[0], 0x12);
}

// ---------------------------------------------------------------------------------------------
// HashSet: deduplication of the auto-sized aggregate's hashes

namespace {

// Deduplicates as the aggregate does, keeping first occurrences, and compares with sort + unique.
void expect_deduplication_matches(const std::vector<uint64_t> &input, const char *what) {
    std::vector<uint64_t> slots(HashSet::slots_for(input.size()));
    ASSERT_GE(2 * slots.size(), 3 * input.size());
    ASSERT_EQ(slots.size() & (slots.size() - 1), 0u) << "a power of two";
    HashSet set(slots.data(), slots.size());
    std::vector<uint64_t> kept;
    for (uint64_t h : input)
        if (set.insert(h)) kept.push_back(h);
    if (input.size() <= 5000) {  // first occurrences in input order (quadratic: small inputs)
        std::vector<uint64_t> first;
        for (uint64_t h : input)
            if (std::none_of(first.begin(), first.end(), [h](uint64_t f) { return f == h; }))
                first.push_back(h);
        ASSERT_EQ(kept.size(), first.size()) << what;
        for (size_t i = 0; i < kept.size(); i++)
            ASSERT_EQ(kept[i], first[i]) << what << " at " << i;
    }
    std::vector<uint64_t> want = input;
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    std::sort(kept.begin(), kept.end());
    ASSERT_EQ(kept.size(), want.size()) << what << " size " << input.size();
    for (size_t i = 0; i < kept.size(); i++) ASSERT_EQ(kept[i], want[i]) << what << " at " << i;
    // Everything is in the set now.
    for (uint64_t h : input) ASSERT_FALSE(set.insert(h)) << what;
}

}  // namespace

TEST(HashSet, RandomWithDuplicates) {
    std::mt19937_64 random(2024);
    for (size_t size : {0u, 1u, 2u, 1023u, 1024u, 1025u, 4096u, 100000u, 300000u}) {
        // A pool of half as many distinct hashes, some sharing their low bits (their first slot);
        // draw with replacement.
        std::vector<uint64_t> pool(std::max<size_t>(1, size / 2));
        for (size_t i = 0; i < pool.size(); i++) {
            pool[i] = random();
            if (i > 0 && random() % 4 == 0)
                pool[i] = (pool[i] & ~0xffffull) | (pool[i - 1] & 0xffff);
        }
        std::vector<uint64_t> input(size);
        for (auto &h : input) h = pool[random() % pool.size()];
        expect_deduplication_matches(input, "random");
        std::vector<uint64_t> distinct(size);
        for (auto &h : distinct) h = random();
        expect_deduplication_matches(distinct, "distinct");
        std::vector<uint64_t> doubled = distinct;
        doubled.insert(doubled.end(), distinct.begin(), distinct.end());
        std::shuffle(doubled.begin(), doubled.end(), random);
        expect_deduplication_matches(doubled, "doubled");
    }
}

TEST(HashSet, CollidingSlotsAndZero) {
    std::mt19937_64 random(5);
    // Every hash probes from the same slot (equal low bits): linear probing must still work.
    std::vector<uint64_t> input(3000);
    for (auto &h : input) h = ((random() % 1000) << 32) | 42;
    expect_deduplication_matches(input, "same slot");
    // The zero hash, which marks empty slots, is a member like any other.
    input.assign({0, 1ull << 40, 0, 1, 0});
    expect_deduplication_matches(input, "zero");
    // Real key hashes, as the auto-sized aggregate sees them.
    SeedKey key;
    std::vector<uint64_t> hashes;
    for (uint64_t i = 0; i < 200000; i++)
        hashes.push_back(key.hash(i % 150000, kFormatVersion2).low);
    expect_deduplication_matches(hashes, "the article's keys");
}

TEST(DistinctSketch, EstimatesWithinAFewPercent) {
    SeedKey key;
    for (uint64_t n : {10ull, 1000ull, 100000ull, 1000000ull}) {
        DistinctSketch sketch{};
        for (uint64_t i = 0; i < n; i++) sketch.add(key.hash(i).low);
        // Repeats do not change it.
        for (uint64_t i = 0; i < n; i++) sketch.add(key.hash(i).low);
        EXPECT_NEAR(sketch.estimate(), double(n), 0.1 * double(n) + 1) << n;
        DistinctSketch half{}, other{};
        for (uint64_t i = 0; i < n; i++) (i % 2 ? half : other).add(key.hash(i).low);
        half.merge(other);
        EXPECT_NEAR(half.estimate(), sketch.estimate(), 1e-9 * double(n)) << n;
    }
}

// ---------------------------------------------------------------------------------------------
// Shards

TEST(Shards, Range) {
    SeedKey key;
    for (uint32_t shards : {1u, 2u, 3u, 7u, 64u, 1000u, 65536u, 0xffffffffu}) {
        for (uint64_t i = 0; i < 20000; i++) {
            key.hash(i);
            uint32_t s = shard_of(key.text, key.length, shards);
            ASSERT_LT(s, shards) << shards;
            if (shards == 1) {
                ASSERT_EQ(s, 0u);
            }
        }
    }
    EXPECT_EQ(shard_of("user7@mail.com", 14, 64), shard_of("user7@mail.com", 14, 64));
    EXPECT_LT(shard_of("", 0, 64), 64u);
}

TEST(Shards, RoughlyUniform) {
    const uint32_t shards = 64;
    const uint64_t keys = 640000;
    std::vector<uint64_t> count(shards, 0);
    SeedKey key;
    for (uint64_t i = 0; i < keys; i++) {
        key.hash(i);
        count[shard_of(key.text, key.length, shards)]++;
    }
    double chi2 = 0;
    const double expected = double(keys) / shards;
    for (uint32_t s = 0; s < shards; s++) {
        EXPECT_NEAR(double(count[s]), expected, 0.05 * expected) << s;  // 5% is 5 sigma
        chi2 += (double(count[s]) - expected) * (double(count[s]) - expected) / expected;
    }
    // 63 degrees of freedom: 120 is far in the tail (p < 1e-5).
    EXPECT_LT(chi2, 120.0);
    // Uneven shard counts too.
    std::vector<uint64_t> three(3, 0);
    for (uint64_t i = 0; i < 300000; i++) {
        key.hash(i);
        three[shard_of(key.text, key.length, 3)]++;
    }
    for (uint64_t c : three) EXPECT_NEAR(double(c), 100000.0, 2000.0);
}

// The keys of one shard spread over every block and keep the false-positive rate: the shard
// number says nothing about the block or the bit positions.
TEST(Shards, IndependentOfBlocks) {
    const uint32_t shards = 64;
    SeedKey key;
    std::vector<uint64_t> shard_zero;  // key numbers in shard 0
    for (uint64_t i = 0; shard_zero.size() < 230000; i++) {
        key.hash(i);
        if (shard_of(key.text, key.length, shards) == 0) shard_zero.push_back(i);
    }

    // A filter of 64 blocks: shard 0's keys land in every one, evenly.
    Filter spread(27000, 0.01);
    ASSERT_EQ(spread.parameters.blocks, 64u);
    std::vector<uint64_t> per_block(spread.parameters.blocks, 0);
    const uint64_t sample = 64000;
    for (uint64_t j = 0; j < sample; j++)
        per_block[block_index(block_hash(key.hash(shard_zero[j]), kFormatVersion), 64)]++;
    double chi2 = 0;
    for (uint64_t c : per_block) {
        EXPECT_GT(c, 0u);
        chi2 += (double(c) - 1000.0) * (double(c) - 1000.0) / 1000.0;
    }
    EXPECT_LT(chi2, 120.0);

    // A filter of shard 0's keys only, probed with other shard-0 keys, keeps its rate.
    const uint64_t n = 30000;
    Filter f(n, 0.01);
    for (uint64_t j = 0; j < n; j++) f.ref().add(key.hash(shard_zero[j]));
    uint64_t false_positives = 0;
    const uint64_t probes = shard_zero.size() - n;
    for (uint64_t j = n; j < shard_zero.size(); j++)
        false_positives += f.ref().contains(key.hash(shard_zero[j]));
    const double measured = double(false_positives) / double(probes);
    Statistics s = statistics(f.bytes.data(), f.header());
    EXPECT_NEAR(measured, s.estimated_error_rate,
                4 * std::sqrt(s.estimated_error_rate / double(probes)));
    EXPECT_LE(measured, 1.1 * 0.01);
    std::printf("shard 0 of 64: measured %.6f over %llu probes, estimated %.6f\n", measured,
                (unsigned long long)probes, s.estimated_error_rate);
}

// ---------------------------------------------------------------------------------------------
// sort_unique and MergeHeap: the runs of a spilling aggregate and their merge

TEST(SpillRuns, SortUniqueMatchesStdSet) {
    std::mt19937_64 random(31);
    for (size_t size : {0u, 1u, 2u, 17u, 1000u, 65536u}) {
        std::vector<uint64_t> input(size);
        for (auto &h : input) h = random() % (size + 1) == 0 ? 0 : random() % (2 * size + 1);
        std::set<uint64_t> want(input.begin(), input.end());
        size_t kept = sort_unique(input.data(), input.size());
        ASSERT_EQ(kept, want.size()) << size;
        ASSERT_TRUE(std::equal(want.begin(), want.end(), input.begin())) << size;
    }
}

TEST(SpillRuns, MergeOfSortedRunsIsTheSortedUnion) {
    std::mt19937_64 random(37);
    for (uint32_t runs : {1u, 2u, 3u, 8u, 33u}) {
        std::vector<std::vector<uint64_t>> run(runs);
        std::set<uint64_t> want;
        for (auto &r : run) {
            r.resize(random() % 500);
            // Small values: runs share hashes; the extremes 0 and ~0 too.
            for (auto &h : r) h = random() % 3 == 0 ? random() % 300 : random();
            if (random() % 2) r.push_back(0);
            if (random() % 2) r.push_back(~uint64_t(0));
            r.resize(sort_unique(r.data(), r.size()));
            want.insert(r.begin(), r.end());
        }
        std::vector<MergeHeap::Entry> entries(runs);
        std::vector<size_t> next(runs, 0);
        MergeHeap heap(entries.data());
        for (uint32_t i = 0; i < runs; i++)
            if (!run[i].empty()) heap.push(run[i][next[i]++], i);
        std::vector<uint64_t> merged;
        while (!heap.empty()) {
            const MergeHeap::Entry top = heap.top();
            if (merged.empty() || merged.back() != top.hash) merged.push_back(top.hash);
            ASSERT_GE(top.hash, merged.back());
            if (next[top.run] < run[top.run].size())
                heap.replace_top(run[top.run][next[top.run]++]);
            else
                heap.pop();
        }
        ASSERT_EQ(merged.size(), want.size()) << runs;
        ASSERT_TRUE(std::equal(want.begin(), want.end(), merged.begin())) << runs;
    }
}
