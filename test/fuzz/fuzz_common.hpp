// Shared by the libFuzzer targets: a CHECK that aborts (so libFuzzer records the input), and
// the operations every valid encoding must survive.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../../src/core/bloom.hpp"

#define FUZZ_CHECK(condition)                                                                   \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            std::fprintf(stderr, "check failed: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

namespace fuzz {

using namespace bloomfilter;

inline void check_statistics(const Statistics &s, const Parameters &p) {
    FUZZ_CHECK(s.bits_set <= p.bits());
    FUZZ_CHECK(s.fill >= 0 && s.fill <= 1);
    FUZZ_CHECK(s.estimated_error_rate >= 0 && s.estimated_error_rate <= 1);
    FUZZ_CHECK(!std::isnan(s.estimated_count) && s.estimated_count >= 0);
    FUZZ_CHECK(std::isinf(s.estimated_count) == false || s.bits_set > 0);
}

// `data` is an encoding that validate() accepted with `header`; it is only read.
inline void exercise_valid(const uint8_t *data, size_t size, const Header &header) {
    const Parameters &p = header.parameters;
    FUZZ_CHECK(p.encoded_bytes() == size);
    FUZZ_CHECK(size <= kMaxEncodedBytes);
    FUZZ_CHECK(header.inserted == read_inserted(data));

    // Valid headers are canonical: what size_filter() and write_empty() give for the same
    // capacity and error_rate, byte for byte up to the inserted counter.
    Parameters sized;
    FUZZ_CHECK(size_filter(p.capacity, p.error_rate, &sized) == Status::ok);
    FUZZ_CHECK(sized.hashes == p.hashes && sized.block_log2 == p.block_log2 &&
               sized.blocks == p.blocks);
    std::vector<uint8_t> empty(size);
    write_empty(p, empty.data());
    FUZZ_CHECK(std::memcmp(empty.data(), data, kOffsetInserted) == 0);
    Header empty_header;
    FUZZ_CHECK(validate(empty.data(), empty.size(), &empty_header) == Status::ok);
    FUZZ_CHECK(check_compatible(header, empty_header) == Status::ok);

    const Statistics before = statistics(data, header);
    check_statistics(before, p);
    Statistics nothing = statistics(empty.data(), empty_header);
    FUZZ_CHECK(nothing.bits_set == 0 && nothing.estimated_count == 0);

    // Add keys taken from the input to a copy: each is then present, and bits only get set.
    std::vector<uint8_t> filter(data, data + size);
    FilterRef ref = FilterRef::of(filter.data(), p);
    const size_t keys = std::min<size_t>(16, size / 8);
    for (size_t i = 0; i < keys; i++) {
        KeyHash h = ref.hash(data + 8 * i, std::min<size_t>(size - 8 * i, 24));
        (void)ref.contains(h);
        ref.add(h);
        FUZZ_CHECK(ref.contains(h));
    }
    add_inserted(filter.data(), keys);
    for (size_t i = kHeaderBytes; i < size; i++) FUZZ_CHECK((filter[i] & data[i]) == data[i]);
    Header filled_header;
    FUZZ_CHECK(validate(filter.data(), filter.size(), &filled_header) == Status::ok);
    const Statistics after = statistics(filter.data(), filled_header);
    check_statistics(after, p);
    FUZZ_CHECK(after.bits_set >= before.bits_set);
    FUZZ_CHECK(after.bits_set <= before.bits_set + uint64_t(keys) * p.hashes);

    // Union with itself, in place: the bits stay, the counter doubles (saturating).
    std::vector<uint8_t> doubled = filter;
    union_bits(doubled.data(), doubled.data(), doubled.data(), 0, size - kHeaderBytes);
    union_inserted(doubled.data(), doubled.data());
    FUZZ_CHECK(std::memcmp(doubled.data() + kHeaderBytes, filter.data() + kHeaderBytes,
                           size - kHeaderBytes) == 0);
    const uint64_t inserted = read_inserted(filter.data());
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    FUZZ_CHECK(read_inserted(doubled.data()) == (inserted > max / 2 ? max : 2 * inserted));
    // Union with the original input, in two chunks, and with the empty filter: nothing new.
    const uint64_t half = (size - kHeaderBytes) / 2;
    union_bits(doubled.data(), doubled.data(), data, 0, half);
    union_bits(doubled.data(), doubled.data(), data, half, size - kHeaderBytes);
    union_bits(doubled.data(), doubled.data(), empty.data(), 0, size - kHeaderBytes);
    FUZZ_CHECK(std::memcmp(doubled.data() + kHeaderBytes, filter.data() + kHeaderBytes,
                           size - kHeaderBytes) == 0);
    Header doubled_header;
    FUZZ_CHECK(validate(doubled.data(), doubled.size(), &doubled_header) == Status::ok);
    FUZZ_CHECK(check_compatible(filled_header, doubled_header) == Status::ok);

    // The text form round-trips.
    std::string text(text_length(size), '\0');
    encode_hex(filter.data(), size, &text[0]);
    std::vector<uint8_t> back(size);
    FUZZ_CHECK(decode_hex(text.data(), text.size(), back.data()));
    FUZZ_CHECK(back == filter);
}

// A layered value (format version 3) that validate() accepted: its layers are where and what
// size_layers() gives, each a filter whose keys are found through layers_contain().
inline void exercise_layered(const uint8_t *data, size_t size, const Header &header) {
    Layers layers;
    FUZZ_CHECK(read_layers(data, size, &layers) == Status::ok);
    FUZZ_CHECK(header.parameters.version == kFormatLayered && layers.encoded_bytes == size);
    FUZZ_CHECK(header.parameters.capacity == layers.capacity && header.inserted == layers.inserted);
    std::vector<uint8_t> copy(data, data + size);
    double rates = 0;
    for (uint32_t n = 0; n < layers.count; n++) {
        const Parameters &p = layers.layer[n];
        FUZZ_CHECK(layers.offset[n] + p.encoded_bytes() <= size);
        rates += p.error_rate;
        // A key added to any one layer of a copy is then present in the whole.
        const size_t at = std::min<size_t>(size - 1, 8 * n);
        FilterRef ref = FilterRef::of(copy.data() + layers.offset[n], p);
        const KeyHash h = hash_bytes(kFormatVersion2, data + at, std::min<size_t>(size - at, 24));
        (void)layers_contain(data, layers, h);
        ref.add(h);
        FUZZ_CHECK(layers_contain(copy.data(), layers, h));
    }
    FUZZ_CHECK(rates < layers.error_rate);
    Header again;
    FUZZ_CHECK(validate(copy.data(), copy.size(), &again) == Status::ok);
}

// Either kind of valid value.
inline void exercise_any(const uint8_t *data, size_t size, const Header &header) {
    if (header.parameters.version == kFormatLayered)
        exercise_layered(data, size, header);
    else
        exercise_valid(data, size, header);
}

}  // namespace fuzz
