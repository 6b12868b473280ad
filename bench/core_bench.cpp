// Google Benchmark of the C++ core's add and contains on the filter of the seed scenario
// (1,000,000 keys user0@mail.com .. user999999@mail.com at error_rate 0.01), next to the seed
// article's algorithm (seed_algorithm.hpp) on the same keys. Each operation hashes its key.
// Probes are in random order, half present and half absent, as in the SQL benchmarks.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../src/core/bloom.hpp"
#include "seed_algorithm.hpp"

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
    seed::BloomFilter seed_filter{kCapacity, kErrorRate};

    Data() : keys(stored_keys()), probes(probe_keys()) {
        if (bloomfilter::size_filter(kCapacity, kErrorRate, &parameters) != bloomfilter::Status::ok) {
            std::fprintf(stderr, "size_filter failed\n");
            std::exit(1);
        }
        v1_parameters = parameters;
        v1_parameters.version = bloomfilter::kFormatVersion1;
        bloomfilter::FilterRef filter = empty(parameters, core_bytes), v1_filter = empty(v1_parameters, v1_bytes);
        for (size_t i = 0; i < keys.size(); i++) {
            filter.add(filter.hash(keys[i].data(), keys[i].size()));
            v1_filter.add(v1_filter.hash(keys[i].data(), keys[i].size()));
            seed_filter.add(keys[i]);
        }
    }

    static bloomfilter::FilterRef empty(const bloomfilter::Parameters &p, std::vector<uint8_t> &bytes) {
        bytes.resize(p.encoded_bytes());
        bloomfilter::write_empty(p, bytes.data());
        return bloomfilter::FilterRef::of(bytes.data(), p);
    }

    static std::vector<std::string> stored_keys() {
        std::vector<std::string> keys;
        for (uint64_t i = 0; i < kCapacity; i++) keys.push_back("user" + std::to_string(i) + "@mail.com");
        std::mt19937_64 random(42);
        std::shuffle(keys.begin(), keys.end(), random);
        return keys;
    }
    static std::vector<std::string> probe_keys() {
        std::vector<std::string> probes;
        std::mt19937_64 random(43);
        std::uniform_int_distribution<uint64_t> pick(0, kCapacity - 1);
        for (uint64_t i = 0; i < kCapacity; i++)
            probes.push_back("user" + std::to_string(pick(random) + (i % 2 == 0 ? 0 : kCapacity)) + "@mail.com");
        std::shuffle(probes.begin(), probes.end(), random);
        return probes;
    }

    bloomfilter::FilterRef core() { return bloomfilter::FilterRef::of(core_bytes.data(), parameters); }
    bloomfilter::FilterRef core_v1() { return bloomfilter::FilterRef::of(v1_bytes.data(), v1_parameters); }
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

void BM_core_contains(benchmark::State &state) { core_contains_cycling(state, data().core(), data().probes.size()); }
// What filters written by bloomfilter 1.0 and 1.1 get: XXH3-128 and the scalar loop.
void BM_core_contains_v1(benchmark::State &state) {
    core_contains_cycling(state, data().core_v1(), data().probes.size());
}

void BM_seed_add(benchmark::State &state) {
    Data &d = data();
    seed::BloomFilter filter(kCapacity, kErrorRate);
    size_t i = 0;
    for (auto _ : state) {
        filter.add(d.keys[i]);
        if (++i == d.keys.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_seed_contains(benchmark::State &state) {
    Data &d = data();
    size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(d.seed_filter.contains(d.probes[i]));
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
        benchmark::DoNotOptimize(bloomfilter::hash_bytes(bloomfilter::kFormatVersion, key.data(), key.size()));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

// contains on the same filter with only 1,024 probes cycling, so the blocks they read stay in
// the L1 and L2 caches: the difference from BM_core_contains is the cost of fetching a block
// from a filter larger than L2.
void BM_core_contains_cached(benchmark::State &state) { core_contains_cycling(state, data().core(), 1024); }

// contains through each way of checking a block this machine has, the vector one that
// BM_core_contains uses included: what the vector check saves, and what a CPU without it gets.
void core_contains_through(benchmark::State &state, bloomfilter::BlockCheck check) {
    Data &d = data();
    bloomfilter::FilterRef filter = d.core();
    filter.check = check;
    size_t i = 0;
    for (auto _ : state) {
        std::string_view key = d.probes[i];
        benchmark::DoNotOptimize(filter.contains(filter.hash(key.data(), key.size())));
        if (++i == d.probes.size()) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}
void BM_core_contains_scalar(benchmark::State &state) {
    core_contains_through(state, bloomfilter::block_check_for(bloomfilter::CheckPath::scalar));
}
void BM_core_contains_avx2(benchmark::State &state) {
    bloomfilter::BlockCheck avx2 = bloomfilter::block_check_for(bloomfilter::CheckPath::avx2);
    if (avx2 == nullptr) return state.SkipWithError("no AVX2 on this CPU");
    core_contains_through(state, avx2);
}

BENCHMARK(BM_core_add);
BENCHMARK(BM_core_contains);
BENCHMARK(BM_core_hash);
BENCHMARK(BM_core_contains_cached);
BENCHMARK(BM_core_contains_scalar);
BENCHMARK(BM_core_contains_avx2);
BENCHMARK(BM_core_contains_v1);
BENCHMARK(BM_seed_add);
BENCHMARK(BM_seed_contains);

// Both filters' measured false-positive rate on 1,000,000 keys never added, as a check that
// the two do the same job.
void print_setup() {
    Data &d = data();
    bloomfilter::FilterRef core = d.core(), v1 = d.core_v1();
    uint64_t core_positives = 0, seed_positives = 0, missed = 0;
    for (uint64_t i = 0; i < kCapacity; i++) {
        std::string key = "absent" + std::to_string(i) + "@mail.com";
        core_positives += core.contains(core.hash(key.data(), key.size()));
        seed_positives += d.seed_filter.contains(key);
    }
    for (size_t i = 0; i < d.keys.size(); i++)
        missed += !core.contains(core.hash(d.keys[i].data(), d.keys[i].size())) +
                  !v1.contains(v1.hash(d.keys[i].data(), d.keys[i].size())) + !d.seed_filter.contains(d.keys[i]);
    std::printf("core: %llu bits in %u blocks of %llu bytes, k = %u, %zu bytes encoded, false-positive rate %.4f\n",
                (unsigned long long)d.parameters.bits(), d.parameters.blocks,
                (unsigned long long)d.parameters.block_bytes(), d.parameters.hashes, d.core_bytes.size(),
                double(core_positives) / double(kCapacity));
    std::printf("core: contains checks blocks with %s\n",
                bloomfilter::chosen_check_path_name());
    std::printf("seed: %llu bits, k = %u, %zu bytes, false-positive rate %.4f\n",
                (unsigned long long)d.seed_filter.bits(), d.seed_filter.hashes(), d.seed_filter.bytes(),
                double(seed_positives) / double(kCapacity));
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
    bloomfilter::choose_check_path();
    print_setup();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
