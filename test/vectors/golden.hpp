// Golden vectors shared by the C++ core and the Python and Node clients: keys of every type with
// the bytes hashed, their hashes in both format versions and shards; composite keys (lists of
// those keys) with their hashes; small filters with each key's block and bit positions and the
// filter's bytes once every key is added; and malformed values with the status that refuses
// them. golden_json() writes them as JSON; the file test/vectors/golden.json is its output (make
// golden-vectors), checked by test/unit/golden_test.cpp against the core and by the clients'
// tests (clients/python/tests, clients/node/test) against theirs, so no side can drift alone.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../src/core/bloom.hpp"

namespace bloomfilter {
namespace golden {

struct Key {
    std::string type;   // text, bytea, bigint, uuid
    std::string shown;  // the key as JSON gives it: text itself, bytea hex, bigint decimal, uuid
    std::vector<uint8_t> bytes;  // what the server hashes
};

inline std::string hex(const uint8_t *data, size_t length) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < length; i++) {
        out += digits[data[i] >> 4];
        out += digits[data[i] & 15];
    }
    return out;
}
inline std::string hex(const std::vector<uint8_t> &v) { return hex(v.data(), v.size()); }

inline std::string u64_hex(uint64_t v) {
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "%016" PRIx64, v);
    return buffer;
}

inline std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

inline Key text_key(const std::string &s) {
    return Key{"text", s, std::vector<uint8_t>(s.begin(), s.end())};
}

// Text of a given length: lengths around XXH3's internal boundaries take each of its paths.
inline std::string text_of_length(size_t length) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string s;
    for (size_t i = 0; i < length; i++) s += alphabet[i % 36];
    return s;
}

inline Key bytea_key(const std::vector<uint8_t> &bytes) { return Key{"bytea", hex(bytes), bytes}; }

inline Key bigint_key(int64_t v) {
    std::vector<uint8_t> bytes(8);
    store_u64(bytes.data(), uint64_t(v));
    return Key{"bigint", std::to_string(v), bytes};
}

inline Key uuid_key(const char *text) {
    std::vector<uint8_t> bytes;
    for (const char *p = text; *p != 0;) {
        if (*p == '-') {
            p++;
            continue;
        }
        unsigned value;
        std::sscanf(p, "%2x", &value);
        bytes.push_back(uint8_t(value));
        p += 2;
    }
    return Key{"uuid", text, bytes};
}

inline std::vector<Key> keys() {
    std::vector<Key> keys;
    for (const char *s :
         {"", "a", "abc", "user1@mail.com", "User7@Mail.COM",
          "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"})
        keys.push_back(text_key(s));
    for (size_t length : {4, 8, 9, 16, 17, 128, 129, 240, 241, 1000})
        keys.push_back(text_key(text_of_length(length)));
    std::vector<uint8_t> all(256);
    for (int i = 0; i < 256; i++) all[i] = uint8_t(i);
    keys.push_back(bytea_key({}));
    keys.push_back(bytea_key({0x00}));
    keys.push_back(bytea_key({0xff, 0xfe}));
    keys.push_back(bytea_key({'a', 'b', 'c'}));
    keys.push_back(bytea_key(all));
    for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), int64_t(42), int64_t(4294967296),
                      int64_t(1234567890123), std::numeric_limits<int64_t>::max(),
                      std::numeric_limits<int64_t>::min()})
        keys.push_back(bigint_key(v));
    for (const char *u :
         {"00000000-0000-0000-0000-000000000000", "123e4567-e89b-12d3-a456-426614174000",
          "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ffffffff-ffff-ffff-ffff-ffffffffffff"})
        keys.push_back(uuid_key(u));
    return keys;
}

struct FilterSpec {
    uint64_t capacity;
    double error_rate;
    uint32_t version;
};

// One block and several; one hash (p = 0.9) and ten (16384-bit blocks); both versions.
inline std::vector<FilterSpec> filter_specs() {
    return {{10, 0.01, 2},    {10, 0.01, 1}, {2000, 0.02, 2}, {2000, 0.02, 1}, {1000, 0.001, 2},
            {1000, 0.001, 1}, {3, 0.9, 2},   {3, 0.9, 1},     {50, 0.3, 2}};
}

inline const char *status_name(Status status) {
    switch (status) {
        case Status::ok: return "ok";
        case Status::capacity_out_of_range: return "capacity_out_of_range";
        case Status::error_rate_out_of_range: return "error_rate_out_of_range";
        case Status::too_large: return "too_large";
        case Status::truncated: return "truncated";
        case Status::bad_magic: return "bad_magic";
        case Status::unsupported_version: return "unsupported_version";
        case Status::bad_block_size: return "bad_block_size";
        case Status::bad_parameters: return "bad_parameters";
        case Status::inconsistent_sizing: return "inconsistent_sizing";
        case Status::bad_length: return "bad_length";
        case Status::bad_layer_count: return "bad_layer_count";
        case Status::bad_layer: return "bad_layer";
        case Status::capacity_mismatch: return "capacity_mismatch";
        case Status::error_rate_mismatch: return "error_rate_mismatch";
        case Status::version_mismatch: return "version_mismatch";
    }
    return "unknown";
}

inline std::string number(double d) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", d);
    return buffer;
}

// Layered values (format version 3): the layers of an index that grows. Key i of keys() is
// added to layer i % layers; `absent` keys are never added.
struct LayeredSpec {
    uint64_t capacity;
    double error_rate;
    uint32_t expansion;
    uint32_t layers;
};

// Three small layers of 512-byte blocks; two where layer 0 has 11 hashes and larger blocks and
// layer 1 is capped at 8; twelve from one key, whose rates take 3^11 (layer_error_rate).
inline std::vector<LayeredSpec> layered_specs() {
    return {{10, 0.01, 2, 3}, {1000, 0.001, 4, 2}, {1, 0.013, 2, 12}};
}

inline std::vector<Key> absent_keys() {
    std::vector<Key> keys;
    for (int i = 0; i < 40; i++) keys.push_back(text_key("absent" + std::to_string(i)));
    return keys;
}

inline std::vector<uint8_t> layered_value(const LayeredSpec &spec, const std::vector<Key> &keys) {
    Layers layers;
    size_layers(spec.capacity, spec.error_rate, spec.expansion, spec.layers, &layers);
    std::vector<uint8_t> bytes(layers.encoded_bytes);
    write_layered_headers(layers, bytes.data());
    for (size_t i = 0; i < keys.size(); i++) {
        const uint32_t n = uint32_t(i % spec.layers);
        FilterRef ref = FilterRef::of(bytes.data() + layers.offset[n], layers.layer[n]);
        ref.add(ref.hash(keys[i].bytes.data(), keys[i].bytes.size()));
        add_inserted(bytes.data() + layers.offset[n], 1);
    }
    write_inserted(bytes.data(), keys.size());
    return bytes;
}

// Malformed values, each a change to the empty filter of capacity 10 at 0.01 (version 2), then
// to the first layered value.
struct Malformed {
    std::string what;
    std::vector<uint8_t> bytes;
};

inline std::vector<Malformed> malformed() {
    Parameters p;
    size_filter(10, 0.01, &p);
    p.version = kFormatVersion2;
    std::vector<uint8_t> good(p.encoded_bytes());
    write_empty(p, good.data());
    auto changed = [&](uint64_t offset, std::vector<uint8_t> with) {
        std::vector<uint8_t> v = good;
        std::memcpy(v.data() + offset, with.data(), with.size());
        return v;
    };
    auto u64_bytes = [](uint64_t x) {
        std::vector<uint8_t> v(8);
        store_u64(v.data(), x);
        return v;
    };
    auto double_bytes = [&](double d) {
        uint64_t raw;
        std::memcpy(&raw, &d, 8);
        return u64_bytes(raw);
    };
    std::vector<Malformed> out;
    out.push_back({"empty", {}});
    out.push_back({"35 bytes", std::vector<uint8_t>(good.begin(), good.begin() + 35)});
    out.push_back({"header only", std::vector<uint8_t>(good.begin(), good.begin() + 36)});
    out.push_back({"magic", changed(0, {'B', 'L', 'O', 'B'})});
    out.push_back({"version 0", changed(4, {0})});
    out.push_back({"version 3", changed(4, {3})});
    out.push_back({"block_log2 11", changed(5, {11})});
    out.push_back({"block_log2 25", changed(5, {25})});
    out.push_back({"block_log2 13", changed(5, {13})});
    out.push_back({"hashes 8", changed(6, {8, 0})});
    out.push_back({"blocks 2", changed(8, {2, 0, 0, 0})});
    out.push_back({"capacity 0", changed(12, u64_bytes(0))});
    out.push_back({"capacity 11 (valid: the same sizing)", changed(12, u64_bytes(11))});
    out.push_back({"capacity 2^63 - 1", changed(12, u64_bytes(uint64_t(INT64_MAX)))});
    out.push_back({"error_rate 0", changed(20, double_bytes(0.0))});
    out.push_back({"error_rate 1", changed(20, double_bytes(1.0))});
    out.push_back({"error_rate -0.5", changed(20, double_bytes(-0.5))});
    out.push_back({"error_rate NaN", changed(20, double_bytes(std::nan("")))});
    out.push_back({"error_rate 0.010000000000000002 (valid: the same sizing)",
                   changed(20, double_bytes(std::nextafter(0.01, 1.0)))});
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    out.push_back({"one byte more", longer});
    out.push_back({"one byte less", std::vector<uint8_t>(good.begin(), good.end() - 1)});
    std::vector<uint8_t> inserted = changed(28, u64_bytes(UINT64_MAX));
    out.push_back({"inserted 2^64 - 1 (valid)", inserted});
    const std::vector<uint8_t> layered = layered_value(layered_specs()[0], keys());
    auto layered_changed = [&](uint64_t offset, std::vector<uint8_t> with) {
        std::vector<uint8_t> v = layered;
        std::memcpy(v.data() + offset, with.data(), with.size());
        return v;
    };
    out.push_back({"layered (valid)", layered});
    out.push_back({"layered: byte 5 not zero", layered_changed(5, {1})});
    out.push_back({"layered: no layer", layered_changed(6, {0, 0})});
    out.push_back({"layered: 33 layers", layered_changed(6, {33, 0})});
    out.push_back({"layered: 4 layers in the length of 3", layered_changed(6, {4, 0})});
    out.push_back({"layered: 2 layers in the length of 3", layered_changed(6, {2, 0})});
    out.push_back({"layered: expansion 1", layered_changed(8, {1, 0, 0, 0})});
    out.push_back({"layered: expansion 1025", layered_changed(8, {1, 4, 0, 0})});
    out.push_back({"layered: expansion 3", layered_changed(8, {3, 0, 0, 0})});
    out.push_back({"layered: capacity 0", layered_changed(12, u64_bytes(0))});
    out.push_back({"layered: error_rate NaN", layered_changed(20, double_bytes(std::nan("")))});
    out.push_back({"layered: capacity 2^62", layered_changed(12, u64_bytes(uint64_t(1) << 62))});
    Layers layers;
    size_layers(10, 0.01, 2, 3, &layers);
    out.push_back(
        {"layered: layer 1 magic", layered_changed(layers.offset[1], {'B', 'L', 'O', 'B'})});
    out.push_back({"layered: layer 1 version 1", layered_changed(layers.offset[1] + 4, {1})});
    out.push_back(
        {"layered: layer 2 capacity 41", layered_changed(layers.offset[2] + 12, u64_bytes(41))});
    out.push_back({"layered: layer 2 inserted 2^64 - 1 (valid)",
                   layered_changed(layers.offset[2] + 28, u64_bytes(UINT64_MAX))});
    std::vector<uint8_t> shorter(layered.begin(), layered.end() - 1);
    out.push_back({"layered: one byte less", shorter});
    std::vector<uint8_t> layered_longer = layered;
    layered_longer.push_back(0);
    out.push_back({"layered: one byte more", layered_longer});
    out.push_back(
        {"layered: header only", std::vector<uint8_t>(layered.begin(), layered.begin() + 36)});
    return out;
}

// Composite keys (a multicolumn index's, bloom_hash of several values): each part a key as
// above, the key's hash XXH3-64 of the parts' hashes (CompositeKey). Pairs that differ only in
// where a separator would be, in order, or in a part's type; one part (its own hash); eight.
inline std::vector<std::vector<Key>> composite_keys() {
    const Key a_uuid = uuid_key("123e4567-e89b-12d3-a456-426614174000");
    std::vector<std::vector<Key>> out = {
        {text_key("t1"), text_key("x")},
        {text_key("t2"), text_key("x")},
        {bigint_key(42), text_key("a@x.com")},
        {bigint_key(42), text_key("x")},
        {text_key("42"), text_key("x")},
        {text_key("ab"), text_key("c")},
        {text_key("a"), text_key("bc")},
        {text_key("x"), text_key("t1")},
        {text_key(""), text_key("")},
        {text_key("google"), text_key("108378923427394743")},
        {a_uuid, bigint_key(-1), bytea_key({0xff, 0x00})},
        {text_key("abc")},
    };
    std::vector<Key> eight;
    for (int64_t i = 0; i < int64_t(kMaxKeyParts); i++)
        eight.push_back(i % 2 ? bigint_key(i) : text_key(text_of_length(size_t(i) * 3)));
    out.push_back(eight);
    return out;
}

inline KeyHash composite_hash_of(const std::vector<Key> &parts) {
    CompositeKey key;
    for (const Key &k : parts)
        key.add(hash_bytes(kFormatVersion2, k.bytes.data(), k.bytes.size()).low);
    return key.hash();
}

inline std::string golden_json() {
    std::string j =
        "{\n  \"comment\": \"Generated by test/vectors/generate.cpp (make golden-vectors) from "
        "src/core; checked by test/unit/golden_test.cpp and clients/python/tests.\",\n";
    const std::vector<Key> all = keys();
    j += "  \"shard_counts\": [1, 2, 7, 64, 1000],\n  \"keys\": [\n";
    for (size_t i = 0; i < all.size(); i++) {
        const Key &k = all[i];
        const KeyHash v1 = hash_bytes(kFormatVersion1, k.bytes.data(), k.bytes.size());
        const KeyHash v2 = hash_bytes(kFormatVersion2, k.bytes.data(), k.bytes.size());
        j += "    {\"type\": " + quoted(k.type) + ", \"key\": " + quoted(k.shown) +
             ", \"bytes\": " + quoted(hex(k.bytes)) +
             ",\n     \"hash_v2\": " + quoted(u64_hex(v2.low)) +
             ", \"bloom_hash\": " + std::to_string(int64_t(v2.low)) +
             ", \"hash_v1_low\": " + quoted(u64_hex(v1.low)) +
             ", \"hash_v1_high\": " + quoted(u64_hex(v1.high)) + ", \"shards\": [";
        bool first = true;
        for (uint32_t shards : {1u, 2u, 7u, 64u, 1000u}) {
            j += (first ? "" : ", ") +
                 std::to_string(shard_of(k.bytes.data(), k.bytes.size(), shards));
            first = false;
        }
        j += std::string("]}") + (i + 1 < all.size() ? "," : "") + "\n";
    }
    j += "  ],\n  \"filters\": [\n";
    const std::vector<FilterSpec> specs = filter_specs();
    for (size_t s = 0; s < specs.size(); s++) {
        const FilterSpec &spec = specs[s];
        Parameters p;
        size_filter(spec.capacity, spec.error_rate, &p);
        p.version = spec.version;
        std::vector<uint8_t> bytes(p.encoded_bytes());
        write_empty(p, bytes.data());
        FilterRef ref = FilterRef::of(bytes.data(), p);
        j += "    {\"capacity\": " + std::to_string(spec.capacity) +
             ", \"error_rate\": " + number(spec.error_rate) +
             ", \"version\": " + std::to_string(spec.version) +
             ", \"hashes\": " + std::to_string(p.hashes) +
             ", \"block_log2\": " + std::to_string(p.block_log2) +
             ", \"blocks\": " + std::to_string(p.blocks) +
             ",\n     \"empty_header\": " + quoted(hex(bytes.data(), kHeaderBytes)) +
             ",\n     \"positions\": [\n";
        for (size_t i = 0; i < all.size(); i++) {
            const KeyHash h = ref.hash(all[i].bytes.data(), all[i].bytes.size());
            const uint32_t block = block_index(block_hash(h, p.version), p.blocks);
            j += "       [" + std::to_string(block) + ", [";
            bool first = true;
            for_each_position(h, p.version, p.hashes, p.block_log2, [&](uint32_t bit) {
                j += (first ? "" : ", ") + std::to_string(bit);
                first = false;
            });
            j += std::string("]]") + (i + 1 < all.size() ? "," : "") + "\n";
            ref.add(h);
        }
        add_inserted(bytes.data(), all.size());
        j += "     ],\n     \"all_keys_added\": " + quoted(hex(bytes)) + "}" +
             (s + 1 < specs.size() ? "," : "") + "\n";
    }
    j += "  ],\n  \"layered\": [\n";
    const std::vector<LayeredSpec> layered = layered_specs();
    const std::vector<Key> absent = absent_keys();
    for (size_t s = 0; s < layered.size(); s++) {
        const LayeredSpec &spec = layered[s];
        Layers layers;
        size_layers(spec.capacity, spec.error_rate, spec.expansion, spec.layers, &layers);
        const std::vector<uint8_t> bytes = layered_value(spec, all);
        j += "    {\"capacity\": " + std::to_string(spec.capacity) +
             ", \"error_rate\": " + number(spec.error_rate) +
             ", \"expansion\": " + std::to_string(spec.expansion) + ", \"layers\": [";
        for (uint32_t n = 0; n < layers.count; n++) {
            const Parameters &p = layers.layer[n];
            j += std::string(n ? ", " : "") + "{\"capacity\": " + std::to_string(p.capacity) +
                 ", \"error_rate\": " + number(p.error_rate) +
                 ", \"hashes\": " + std::to_string(p.hashes) +
                 ", \"block_log2\": " + std::to_string(p.block_log2) +
                 ", \"blocks\": " + std::to_string(p.blocks) +
                 ", \"offset\": " + std::to_string(layers.offset[n]) + "}";
        }
        j += "],\n     \"absent\": [";
        for (size_t i = 0; i < absent.size(); i++) {
            const KeyHash h =
                hash_bytes(kFormatVersion2, absent[i].bytes.data(), absent[i].bytes.size());
            j += std::string(i ? ", " : "") + "[" + quoted(absent[i].shown) + ", " +
                 (layers_contain(bytes.data(), layers, h) ? "true" : "false") + "]";
        }
        j += "],\n     \"bytes\": " + quoted(hex(bytes)) + "}" +
             (s + 1 < layered.size() ? "," : "") + "\n";
    }
    j += "  ],\n  \"composite\": [\n";
    const std::vector<std::vector<Key>> composites = composite_keys();
    for (size_t c = 0; c < composites.size(); c++) {
        j += "    {\"parts\": [";
        for (size_t i = 0; i < composites[c].size(); i++) {
            const Key &k = composites[c][i];
            j += std::string(i ? ", " : "") + "{\"type\": " + quoted(k.type) +
                 ", \"key\": " + quoted(k.shown) + ", \"bloom_hash\": " +
                 std::to_string(
                     int64_t(hash_bytes(kFormatVersion2, k.bytes.data(), k.bytes.size()).low)) +
                 "}";
        }
        const KeyHash h = composite_hash_of(composites[c]);
        j += "],\n     \"hash_v2\": " + quoted(u64_hex(h.low)) +
             ", \"bloom_hash\": " + std::to_string(int64_t(h.low)) + "}" +
             (c + 1 < composites.size() ? "," : "") + "\n";
    }
    j += "  ],\n  \"malformed\": [\n";
    const std::vector<Malformed> bad = malformed();
    for (size_t i = 0; i < bad.size(); i++) {
        Header header;
        const Status status = validate(bad[i].bytes.data(), bad[i].bytes.size(), &header);
        j += "    {\"what\": " + quoted(bad[i].what) +
             ", \"status\": " + quoted(status_name(status)) +
             ", \"bytes\": " + quoted(hex(bad[i].bytes)) + "}" + (i + 1 < bad.size() ? "," : "") +
             "\n";
    }
    j += "  ]\n}\n";
    return j;
}

}  // namespace golden
}  // namespace bloomfilter
