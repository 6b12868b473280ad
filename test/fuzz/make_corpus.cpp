// Writes the fuzzers' seed corpus: a few small valid encodings (empty and filled, several block
// sizes and hash counts) and a few broken ones, as bytes for fuzz_validate and as "\x" hex text
// for fuzz_hex. Run by `make fuzz-corpus`; the output is committed under test/fuzz/corpus/.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "../../src/core/bloom.hpp"

using namespace bloomfilter;

static std::string directory;

static void write_file(const std::string &target, const std::string &name, const void *data,
                       size_t size) {
    std::string path = directory + "/" + target + "/" + name;
    FILE *file = std::fopen(path.c_str(), "wb");
    if (!file || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
        std::perror(path.c_str());
        std::exit(1);
    }
}

static void emit(const std::string &name, const std::vector<uint8_t> &bytes) {
    write_file("fuzz_validate", name, bytes.data(), bytes.size());
    std::string text(text_length(bytes.size()), '\0');
    encode_hex(bytes.data(), bytes.size(), &text[0]);
    write_file("fuzz_hex", name, text.data(), text.size());
}

static std::vector<uint8_t> filter(uint64_t capacity, double error_rate, uint64_t keys,
                                   uint32_t version = kFormatVersion) {
    Parameters p;
    if (size_filter(capacity, error_rate, &p) != Status::ok) std::abort();
    p.version = version;
    std::vector<uint8_t> bytes(p.encoded_bytes());
    write_empty(p, bytes.data());
    FilterRef ref = FilterRef::of(bytes.data(), p);
    for (uint64_t i = 0; i < keys; i++) {
        std::string key = "user" + std::to_string(i) + "@mail.com";
        ref.add(ref.hash(key.data(), key.size()));
    }
    write_inserted(bytes.data(), keys);
    Header header;
    if (validate(bytes.data(), bytes.size(), &header) != Status::ok) std::abort();
    return bytes;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIRECTORY\n", argv[0]);
        return 2;
    }
    directory = argv[1];

    // Valid: one 4096-bit block (k = 7, 1, 33), one 8192-bit block, three and five blocks.
    emit("valid_1x4096_empty", filter(1, 0.01, 0));
    emit("valid_1x4096_k1", filter(1, 0.9999999, 1));
    emit("valid_1x4096_k33", filter(10, 1e-10, 10));
    emit("valid_1x8192_k8", filter(600, 0.003, 600));
    emit("valid_3x4096_seed", filter(1000, 0.01, 1000));
    emit("valid_3x4096_seed_version1", filter(1000, 0.01, 1000, kFormatVersion1));
    emit("valid_5x4096_k4", filter(3000, 0.05, 3000));
    std::vector<uint8_t> saturated = filter(1000, 0.01, 1000);
    write_inserted(saturated.data(), ~uint64_t(0));
    emit("valid_3x4096_counter_max", saturated);
    // Layered values (format version 3): three small layers, and two of larger blocks.
    for (const auto &[name, capacity, error_rate, expansion, count] :
         {std::tuple<const char *, uint64_t, double, uint32_t, uint32_t>{"valid_layered_3", 10,
                                                                         0.01, 2, 3},
          {"valid_layered_2_k11", 1000, 0.001, 4, 2}}) {
        Layers layers;
        if (size_layers(capacity, error_rate, expansion, count, &layers) != Status::ok)
            std::abort();
        std::vector<uint8_t> bytes(layers.encoded_bytes);
        write_layered_headers(layers, bytes.data());
        Header header;
        if (validate(bytes.data(), bytes.size(), &header) != Status::ok) std::abort();
        emit(name, bytes);
    }

    // Broken, one field each.
    const std::vector<uint8_t> good = filter(1000, 0.01, 1000);
    std::vector<uint8_t> b;
    emit("broken_empty", {});
    emit("broken_header_only_35", std::vector<uint8_t>(good.begin(), good.begin() + 35));
    emit("broken_header_only_36", std::vector<uint8_t>(good.begin(), good.begin() + 36));
    b = good, b.pop_back(), emit("broken_one_short", b);
    b = good, b.push_back(0), emit("broken_one_long", b);
    b = good, b[kOffsetMagic] = 'b', emit("broken_magic", b);
    b = good, b[kOffsetVersion] = 3, emit("broken_version", b);
    b = good, b[kOffsetBlockLog2] = 11, emit("broken_block_log2", b);
    b = good, store_u16(b.data() + kOffsetHashes, 8), emit("broken_hashes", b);
    b = good, store_u32(b.data() + kOffsetBlocks, 2), emit("broken_blocks", b);
    b = good, store_u64(b.data() + kOffsetCapacity, 0), emit("broken_capacity_zero", b);
    b = good, store_u64(b.data() + kOffsetErrorRate, 0x7ff8000000000000ull),
    emit("broken_error_rate_nan", b);
    b = good, store_u64(b.data() + kOffsetCapacity, 1000000000), emit("broken_too_large", b);
    // Hex-only breakage: upper-case digits are valid, a stray character or odd count is not.
    std::string text(text_length(good.size()), '\0');
    encode_hex(good.data(), good.size(), &text[0]);
    std::string upper = text;
    for (size_t i = 2; i < upper.size(); i++) upper[i] = char(std::toupper(upper[i]));
    write_file("fuzz_hex", "valid_upper_case", upper.data(), upper.size());
    write_file("fuzz_hex", "broken_odd", text.data(), text.size() - 1);
    std::string stray = text;
    stray[40] = 'g';
    write_file("fuzz_hex", "broken_stray_character", stray.data(), stray.size());
    write_file("fuzz_hex", "broken_no_prefix", text.data() + 2, text.size() - 2);
    return 0;
}
