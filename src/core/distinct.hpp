// Counting distinct 64-bit hashes, for the aggregate that sizes a filter for the number of
// distinct keys it is given: an exact set over caller-owned memory, and a HyperLogLog sketch that
// says when deduplicating would free memory; sorted runs of hashes for the aggregate that spills
// them to temporary files. Plain C++17, no PostgreSQL header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bloomfilter {

// A set of distinct 64-bit hashes over caller-owned slots (open addressing, linear probing).
// The auto-sized aggregate deduplicates each bucket of its hashes with it, in cache.
class HashSet {
public:
    // The number of slots for up to `count` hashes: a power of two, at least 1.5 times as many.
    static size_t slots_for(size_t count);
    // Clears `slot_count` slots (a value of slots_for()).
    HashSet(uint64_t *slots, size_t slot_count);
    // True when h was not in the set yet. Inline: the final step of the aggregate calls it once
    // per hash held.
    bool insert(uint64_t h) {
        if (h == 0) {
            bool is_new = !has_zero_;
            has_zero_ = true;
            return is_new;
        }
        for (size_t slot = slot_of(h);; slot = (slot + 1) & mask_) {
            uint64_t &entry = slots_[slot];
            if (entry == 0) {
                entry = h;
                return true;
            }
            if (entry == h) return false;
        }
    }
    // Starts loading the slot where h's search begins: a caller that knows its next hashes
    // prefetches a few ahead, so the inserts do not wait on the cache one at a time.
    void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[slot_of(h)], 1); }

private:
    // The low bits: the aggregate's buckets are chosen by the top ones.
    size_t slot_of(uint64_t h) const { return size_t(h) & mask_; }

    uint64_t *slots_;
    size_t mask_;
    bool has_zero_;  // 0 marks an empty slot, so a real 0 hash is kept apart
};

// A HyperLogLog sketch of the distinct keys seen (1024 registers, about 3% error). The
// auto-sized aggregate asks it whether deduplicating its hashes now would free memory, so it
// never sorts a mostly distinct input before the end.
struct DistinctSketch {
    static constexpr uint32_t kRegisterBits = 10;
    uint8_t registers[1u << kRegisterBits];

    // h is a 64-bit hash; the register is chosen by its bits below the top 8 (which pick the
    // aggregate's bucket), the rank comes from the rest.
    void add(uint64_t h) {
        uint32_t index = uint32_t((h >> (56 - kRegisterBits)) & ((1u << kRegisterBits) - 1));
        uint64_t rest = (h << (8 + kRegisterBits)) | (uint64_t(1) << (8 + kRegisterBits - 1));
        uint8_t rank = uint8_t(__builtin_clzll(rest) + 1);
        if (rank > registers[index]) registers[index] = rank;
    }
    void merge(const DistinctSketch &other) {
        for (uint32_t i = 0; i < (1u << kRegisterBits); i++)
            if (other.registers[i] > registers[i]) registers[i] = other.registers[i];
    }
    double estimate() const;
};

// Sorts `count` hashes in place and drops repeats; returns how many distinct hashes remain,
// in increasing order at the front. A spilling aggregate writes each of its runs this way.
size_t sort_unique(uint64_t *hashes, size_t count);

// A k-way merge of sorted runs of hashes: a binary heap of each run's next hash, over
// caller-owned entries (one per run). The smallest hash is on top; equal hashes come out
// one after the other, so the caller drops repeats by comparing with the last one it kept.
class MergeHeap {
public:
    struct Entry {
        uint64_t hash;
        uint32_t run;
    };
    explicit MergeHeap(Entry *entries) : entries_(entries), size_(0) {}
    bool empty() const { return size_ == 0; }
    const Entry &top() const { return entries_[0]; }
    void push(uint64_t hash, uint32_t run);
    // The top's run goes on with `hash` (not smaller than the top's).
    void replace_top(uint64_t hash) {
        entries_[0].hash = hash;
        sift_down(0);
    }
    // The top's run has ended.
    void pop() {
        entries_[0] = entries_[--size_];
        if (size_ > 0) sift_down(0);
    }

private:
    void sift_down(uint32_t at);

    Entry *entries_;
    uint32_t size_;
};

}  // namespace bloomfilter
