// Google Benchmark of the C++ core's add and contains on the filter of the article's scenario
// (1,000,000 keys user0@mail.com .. user999999@mail.com at error_rate 0.01), next to libbloom
// (Debian's libbloom-dev, a C Bloom filter library in wide use) and the article's algorithm
// (article_algorithm.hpp) on the same keys. Each operation hashes its key. Probes are in random
// order, half present and half absent, as in the SQL benchmarks. The core's contains is also
// timed through each way of checking a block (CheckPath) the CPU has, forced.
#include <benchmark/benchmark.h>
#include <bloom.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../src/core/bloom.hpp"
#include "article_algorithm.hpp"

namespace {

constexpr uint64_t kCapacity = 1000000;
constexpr double kErrorRate = 0.01;

// Keys packed one after another in the order they are used, so a benchmark reads them
// sequentially (as a scan hands keys to the server) and times the filter, not cache misses on
// scattered std::string buffers.
class KeyList {
public:
    explicit KeyList(const std::vector<std::string> &keys) {
        for (const std::string &key : keys) {
            starts_.push_back(bytes_.size());
            bytes_ += key;
        }
        starts_.push_back(bytes_.size());
    }
    size_t size() const { return starts_.size() - 1; }
    std::string_view operator[](size_t i) const {
        return std::string_view(bytes_.data() + starts_[i], starts_[i + 1] - starts_[i]);
    }

private:
    std::string bytes_;
    std::vector<size_t> starts_;
};

struct Data {
    KeyList keys;    // the stored keys, in random order
    KeyList probes;  // half stored keys, half user1000000@mail.com .. (absent), in random order
    std::vector<uint8_t> core_bytes;  // the core's encoding with every key added
    bloomfilter::Parameters parameters;
    std::vector<uint8_t> v1_bytes;  // the same keys in a format version 1 filter
    bloomfilter::Parameters v1_parameters;
    article::BloomFilter article_filter{kCapacity, kErrorRate};
    struct bloom libbloom_filter;

    Data() : keys(stored_keys()), probes(probe_keys()) {
        if (bloom_init(&libbloom_filter, int(kCapacity), kErrorRate) != 0) {
            std::fprintf(stderr, "libbloom's bloom_init failed\n");
            std::exit(1);
        }
        if (bloomfilter::size_filter(kCapacity, kErrorRate, &parameters) !=
            bloomfilter::Status::ok) {
            std::fprintf(stderr, "size_filter failed\n");
            std::exit(1);
        }
        v1_parameters = parameters;
        v1_parameters.version = bloomfilter::kFormatVersion1;
        bloomfilter::FilterRef filter = empty(parameters, core_bytes),
                               v1_filter = empty(v1_parameters, v1_bytes);
        for (size_t i = 0; i < keys.size(); i++) {
            filter.add(filter.hash(keys[i].data(), keys[i].size()));
            v1_filter.add(v1_filter.hash(keys[i].data(), keys[i].size()));
            article_filter.add(keys[i]);
            bloom_add(&libbloom_filter, keys[i].data(), int(keys[i].size()));
        }
    }

    static bloomfilter::FilterRef empty(const bloomfilter::Parameters &p,
                                        std::vector<uint8_t> &bytes) {
        bytes.resize(p.encoded_bytes());
        bloomfilter::write_empty(p, bytes.data());
        return bloomfilter::FilterRef::of(bytes.data(), p);
    }

    static std::vector<std::string> stored_keys() {
        std::vector<std::string> keys;
        for (uint64_t i = 0; i < kCapacity; i++)
            keys.push_back("user" + std::to_string(i) + "@mail.com");
        std::mt19937_64 random(42);
        std::shuffle(keys.begin(), keys.end(), random);
        return keys;
    }
    static std::vector<std::string> probe_keys() {
        std::vector<std::string> probes;
        std::mt19937_64 random(43);
        std::uniform_int_distribution<uint64_t> pick(0, kCapacity - 1);
        for (uint64_t i = 0; i < kCapacity; i++)
            probes.push_back("user" + std::to_string(pick(random) + (i % 2 == 0 ? 0 : kCapacity)) +
                             "@mail.com");
        std::shuffle(probes.begin(), probes.end(), random);
        return probes;
    }

    bloomfilter::FilterRef core() {
        return bloomfilter::FilterRef::of(core_bytes.data(), parameters);
    }
    bloomfilter::FilterRef core_v1() {
        return bloomfilter::FilterRef::of(v1_bytes.data(), v1_parameters);
    }
};

Data &data() {
    static Data instance;
    return instance;
}

void BM_core_add(benchmark::State &state) {
    Data &d = data();
    std::vector<uint8_t> bytes(d.parameters.encoded_bytes());
    bloomfilter::write_empty(d.parameters, bytes.data());
    bloomfilter::FilterRef filter = bloomfilter::FilterRef::of(bytes.data(), d.parameters);
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.keys[i];
        filter.add(filter.hash(key.data(), key.size()));
        if (++i == d.keys.size()) i = 0;
    }
    benchmark::DoNotOptimize(bytes.data());
    benchmark::ClobberMemory();
    state.SetItemsProcessed(state.iterations());
}

// contains over the first `cycle` probes, again and again.
void core_contains_cycling(benchmark::State &state, bloomfilter::FilterRef filter, size_t cycle) {
    Data &d = data();
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.probes[i];
        benchmark::DoNotOptimize(filter.contains(filter.hash(key.data(), key.size())));
        if (++i == cycle) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_core_contains(benchmark::State &state) {
    core_contains_cycling(state, data().core(), data().probes.size());
}
// What filters written by bloomfilter 1.0 and 1.1 get: XXH3-128 and the scalar loop.
void BM_core_contains_v1(benchmark::State &state) {
    core_contains_cycling(state, data().core_v1(), data().probes.size());
}

void BM_article_add(benchmark::State &state) {
    Data &d = data();
    article::BloomFilter filter(kCapacity, kErrorRate);
    size_t i = 0;
    for (auto _ : state) {
        filter.add(d.keys[i]);
        if (++i == d.keys.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_article_contains(benchmark::State &state) {
    Data &d = data();
    size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(d.article_filter.contains(d.probes[i]));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

// The key's hash alone, to tell hashing from reading the filter's bits in the two above.
void BM_core_hash(benchmark::State &state) {
    Data &d = data();
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.probes[i];
        benchmark::DoNotOptimize(
            bloomfilter::hash_bytes(bloomfilter::kFormatVersion, key.data(), key.size()));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

// contains on the same filter with only 1,024 probes cycling, so the blocks they read stay in
// the L1 and L2 caches: the difference from BM_core_contains is the cost of fetching a block
// from a filter larger than L2.
void BM_core_contains_cached(benchmark::State &state) {
    core_contains_cycling(state, data().core(), 1024);
}

// contains through each way of checking a block, forced, where the CPU has it: what each saves,
// and what a CPU without the faster ones gets (the AVX2 figure is an AVX2-only CPU's, but for
// its memory). BM_core_contains takes the one choose_check_path() chose.
void core_contains_through(benchmark::State &state, bloomfilter::CheckPath path) {
    Data &d = data();
    bloomfilter::FilterRef filter = d.core();
    filter.check = bloomfilter::block_check_for(path);
    if (filter.check == nullptr)
        return state.SkipWithError(
            (std::string("no ") + bloomfilter::check_path_name(path) + " path on this CPU")
                .c_str());
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.probes[i];
        benchmark::DoNotOptimize(filter.contains(filter.hash(key.data(), key.size())));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}
void BM_core_contains_scalar(benchmark::State &state) {
    core_contains_through(state, bloomfilter::CheckPath::scalar);
}
void BM_core_contains_avx2(benchmark::State &state) {
    core_contains_through(state, bloomfilter::CheckPath::avx2);
}
void BM_core_contains_avx512(benchmark::State &state) {
    core_contains_through(state, bloomfilter::CheckPath::avx512);
}

// libbloom on the same keys: its bloom_add and bloom_check hash the key themselves (MurmurHash2,
// twice) and reduce each position modulo the bit count.
void BM_libbloom_add(benchmark::State &state) {
    Data &d = data();
    struct bloom filter;
    if (bloom_init(&filter, int(kCapacity), kErrorRate) != 0)
        return state.SkipWithError("bloom_init failed");
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.keys[i];
        benchmark::DoNotOptimize(bloom_add(&filter, key.data(), int(key.size())));
        if (++i == d.keys.size()) i = 0;
    }
    bloom_free(&filter);
    state.SetItemsProcessed(state.iterations());
}

void BM_libbloom_contains(benchmark::State &state) {
    Data &d = data();
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.probes[i];
        benchmark::DoNotOptimize(bloom_check(&d.libbloom_filter, key.data(), int(key.size())));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_core_add);
BENCHMARK(BM_core_contains);
BENCHMARK(BM_core_hash);
BENCHMARK(BM_core_contains_cached);
BENCHMARK(BM_core_contains_scalar);
BENCHMARK(BM_core_contains_avx2);
BENCHMARK(BM_core_contains_avx512);
BENCHMARK(BM_core_contains_v1);
BENCHMARK(BM_libbloom_add);
BENCHMARK(BM_libbloom_contains);
BENCHMARK(BM_article_add);
BENCHMARK(BM_article_contains);

// Each filter's memory and measured false-positive rate on 1,000,000 keys never added, as a check
// that they do the same job, and the check the core chose with what its calibration measured.
void print_setup(const bloomfilter::CheckCalibration &calibration) {
    Data &d = data();
    bloomfilter::FilterRef core = d.core(), v1 = d.core_v1();
    uint64_t core_positives = 0, libbloom_positives = 0, article_positives = 0, missed = 0;
    for (uint64_t i = 0; i < kCapacity; i++) {
        std::string key = "absent" + std::to_string(i) + "@mail.com";
        core_positives += core.contains(core.hash(key.data(), key.size()));
        libbloom_positives += bloom_check(&d.libbloom_filter, key.data(), int(key.size())) == 1;
        article_positives += d.article_filter.contains(key);
    }
    for (size_t i = 0; i < d.keys.size(); i++)
        missed += !core.contains(core.hash(d.keys[i].data(), d.keys[i].size())) +
                  !v1.contains(v1.hash(d.keys[i].data(), d.keys[i].size())) +
                  !d.article_filter.contains(d.keys[i]) +
                  (bloom_check(&d.libbloom_filter, d.keys[i].data(), int(d.keys[i].size())) != 1);
    auto line = [](const char *name, uint64_t bytes, uint32_t hashes, uint64_t positives,
                   const char *what) {
        std::printf(
            "filter %s: %llu bytes, %.2f bits per key, k = %u, false-positive rate %.4f%%; %s\n",
            name, (unsigned long long)bytes, 8.0 * double(bytes) / double(kCapacity), hashes,
            100.0 * double(positives) / double(kCapacity), what);
    };
    char core_what[160];
    std::snprintf(core_what, sizeof core_what, "%u blocks of %llu bytes, %llu bits, XXH3-64",
                  d.parameters.blocks, (unsigned long long)d.parameters.block_bytes(),
                  (unsigned long long)d.parameters.bits());
    line("core", d.core_bytes.size(), d.parameters.hashes, core_positives, core_what);
    line("libbloom", uint64_t(d.libbloom_filter.bytes), uint32_t(d.libbloom_filter.hashes),
         libbloom_positives, "one array, MurmurHash2 twice, positions modulo the bit count");
    line("article", d.article_filter.bytes(), d.article_filter.hashes(), article_positives,
         "one array, SHA-256 and MD5 (the article's algorithm)");
    std::printf("(false-positive rates over %llu keys never added)\n",
                (unsigned long long)kCapacity);
    std::printf(
        "core: contains checks blocks with %s; chosen by timing at start (%.0f us), time relative "
        "to scalar:",
        bloomfilter::chosen_check_path_name(), calibration.microseconds);
    for (uint32_t p = 0; p < bloomfilter::kCheckPaths; p++) {
        if (bloomfilter::block_check_for(bloomfilter::CheckPath(p)) != nullptr)
            std::printf(" %s %.2f", bloomfilter::check_path_name(bloomfilter::CheckPath(p)),
                        calibration.relative_time[p]);
        else
            std::printf(" %s (not on this CPU)",
                        bloomfilter::check_path_name(bloomfilter::CheckPath(p)));
    }
    std::printf("\n");
    if (missed != 0) {
        std::fprintf(stderr, "%llu stored keys not found\n", (unsigned long long)missed);
        std::exit(1);
    }
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    print_setup(bloomfilter::choose_check_path());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
