// Counting distinct 64-bit hashes (see distinct.hpp).
#include "distinct.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace bloomfilter {

// Loaded at most 2/3: linear probing stays short, and the scratch is at most 3 x 8 bytes per
// hash of the largest bucket.
size_t HashSet::slots_for(size_t count) {
    size_t slots = 16;
    while (2 * slots < 3 * count) slots *= 2;
    return slots;
}

HashSet::HashSet(uint64_t *slots, size_t slot_count)
    : slots_(slots), mask_(slot_count - 1), has_zero_(false) {
    std::memset(slots, 0, slot_count * sizeof(uint64_t));
}

double DistinctSketch::estimate() const {
    const double m = double(1u << kRegisterBits);
    double sum = 0;
    uint32_t zeros = 0;
    for (uint32_t i = 0; i < (1u << kRegisterBits); i++) {
        // Registers hold at most 64 - 8 - kRegisterBits + 1: 2^-r exactly, without ldexp.
        uint64_t one = uint64_t(1023 - registers[i]) << 52;
        double inverse_power;
        std::memcpy(&inverse_power, &one, 8);
        sum += inverse_power;
        if (registers[i] == 0) zeros++;
    }
    double estimate = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    // Small cardinalities: linear counting is more accurate.
    if (estimate <= 2.5 * m && zeros > 0) estimate = m * std::log(m / zeros);
    return estimate;
}

size_t sort_unique(uint64_t *hashes, size_t count) {
    std::sort(hashes, hashes + count);
    return size_t(std::unique(hashes, hashes + count) - hashes);
}

void MergeHeap::push(uint64_t hash, uint32_t run) {
    uint32_t at = size_++;
    while (at > 0) {
        uint32_t parent = (at - 1) / 2;
        if (entries_[parent].hash <= hash) break;
        entries_[at] = entries_[parent];
        at = parent;
    }
    entries_[at] = Entry{hash, run};
}

void MergeHeap::sift_down(uint32_t at) {
    const Entry moving = entries_[at];
    for (;;) {
        uint32_t child = 2 * at + 1;
        if (child >= size_) break;
        if (child + 1 < size_ && entries_[child + 1].hash < entries_[child].hash) child++;
        if (moving.hash <= entries_[child].hash) break;
        entries_[at] = entries_[child];
        at = child;
    }
    entries_[at] = moving;
}

}  // namespace bloomfilter
