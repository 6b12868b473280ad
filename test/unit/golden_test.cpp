// The golden vectors in test/vectors/golden.json are what the core computes today: the hashes,
// shards, positions and filter bytes of golden.hpp's keys, and the status of each malformed
// value. The Python client's tests read the same file, so a change on either side fails here or
// there. After a deliberate format change, regenerate with `make golden-vectors`.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "../vectors/golden.hpp"

#ifndef BLOOMFILTER_SOURCE_DIR
#define BLOOMFILTER_SOURCE_DIR "."
#endif

namespace {

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

TEST(GoldenVectors, FileMatchesTheCore) {
    const std::string path = std::string(BLOOMFILTER_SOURCE_DIR) + "/test/vectors/golden.json";
    const std::string stored = read_file(path);
    ASSERT_FALSE(stored.empty()) << "cannot read " << path;
    const std::string computed = bloomfilter::golden::golden_json();
    if (stored == computed) return;
    // Point at the first line that differs.
    std::istringstream a(stored), b(computed);
    std::string line_a, line_b;
    for (int line = 1;; line++) {
        const bool more_a = bool(std::getline(a, line_a)), more_b = bool(std::getline(b, line_b));
        if (!more_a && !more_b) break;
        ASSERT_EQ(line_a, line_b) << path << " line " << line
                                  << " differs from what the core computes";
    }
    FAIL() << path << " differs from what the core computes";
}

// The vectors exercise what they claim: several blocks, one hash and ten, both versions, and
// every malformed value refused for its own reason.
TEST(GoldenVectors, Coverage) {
    using namespace bloomfilter;
    bool several_blocks = false, one_hash = false, large_block = false;
    for (const auto &spec : golden::filter_specs()) {
        Parameters p;
        ASSERT_EQ(size_filter(spec.capacity, spec.error_rate, &p), Status::ok);
        several_blocks |= p.blocks > 1;
        one_hash |= p.hashes == 1;
        large_block |= p.block_log2 > kMinBlockLog2;
    }
    EXPECT_TRUE(several_blocks);
    EXPECT_TRUE(one_hash);
    EXPECT_TRUE(large_block);
    std::set<std::string> statuses;
    for (const auto &bad : golden::malformed()) {
        Header header;
        statuses.insert(golden::status_name(validate(bad.bytes.data(), bad.bytes.size(), &header)));
    }
    for (const char *s :
         {"truncated", "bad_magic", "unsupported_version", "bad_block_size", "bad_parameters",
          "inconsistent_sizing", "bad_length", "too_large", "ok", "bad_layer_count", "bad_layer"})
        EXPECT_EQ(statuses.count(s), 1u) << s;
}

// A layered value answers "present" for every key of every layer, each layer in its own place.
TEST(GoldenVectors, LayeredValuesHoldEveryKey) {
    using namespace bloomfilter;
    const std::vector<golden::Key> keys = golden::keys();
    for (const auto &spec : golden::layered_specs()) {
        const std::vector<uint8_t> bytes = golden::layered_value(spec, keys);
        Header header;
        ASSERT_EQ(validate(bytes.data(), bytes.size(), &header), Status::ok);
        EXPECT_EQ(header.parameters.version, kFormatLayered);
        EXPECT_EQ(header.parameters.capacity, spec.capacity);
        EXPECT_EQ(header.inserted, keys.size());
        Layers layers;
        ASSERT_EQ(read_layers(bytes.data(), bytes.size(), &layers), Status::ok);
        ASSERT_EQ(layers.count, spec.layers);
        double rates = 0;
        for (uint32_t n = 0; n < layers.count; n++) rates += layers.layer[n].error_rate;
        EXPECT_LT(rates, spec.error_rate);
        for (size_t i = 0; i < keys.size(); i++) {
            const KeyHash h =
                hash_bytes(kFormatVersion2, keys[i].bytes.data(), keys[i].bytes.size());
            EXPECT_TRUE(layers_contain(bytes.data(), layers, h)) << i;
            const uint32_t n = uint32_t(i % spec.layers);
            const uint8_t *at = bytes.data() + layers.offset[n];
            EXPECT_TRUE(FilterRef::of(const_cast<uint8_t *>(at), layers.layer[n]).contains(h));
        }
    }
    // The largest value: past 1 GB, too_large; past 32 layers, bad_layer_count.
    Layers layers;
    EXPECT_EQ(size_layers(1000000, 0.01, 2, 12, &layers), Status::too_large);
    EXPECT_EQ(size_layers(10, 0.01, 2, 33, &layers), Status::bad_layer_count);
    EXPECT_EQ(size_layers(10, 0.01, 2, 10, &layers), Status::ok);
}

}  // namespace
