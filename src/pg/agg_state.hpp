// The state of the aggregates bloom_agg and bloom_union_agg (see bloom_agg.cpp), and the hash
// container of the auto-sized forms: the distinct 64-bit hashes of the keys (format version 2's).
// A new state holds them in one flat array, doubled as it fills and sorted and deduplicated in
// place before each doubling, so a small group costs 8 to 16 bytes a key and a few dozen bytes
// more. Past kFlatMax hashes they move to 256 buckets by their top bits, held in 7 bytes each
// (appends stay in cache, and each bucket is deduplicated on its own, in cache, at the end). A
// bucket is a list of chunks, so growing never copies and at most its last chunk is partly
// empty; it is deduplicated before it grows only when a HyperLogLog sketch says the input repeats
// itself, so memory follows the number of distinct keys without deduplicating a mostly distinct
// input more than once. All the states of one aggregate in one plan node share one memory budget
// (agg_budget.hpp); past it, the largest states' hashes go to temporary files (agg_spill.hpp).
#pragma once

#include "glue.hpp"
#include "../core/distinct.hpp"

namespace bloomfilter {

// The format of the filters the auto-sized form builds: its held hashes are this version's.
constexpr uint32_t kAutoVersion = kFormatVersion2;
constexpr uint32_t kBucketBits = 8;
constexpr uint32_t kBuckets = 1u << kBucketBits;
// A bucket's first chunk holds what the flat array gave it (about 256 hashes); the next ones
// hold 290 (2 kB). The partly empty last chunks of all buckets add at most 0.5 MB, 0.25 MB on
// average, to at least 0.45 MB of hashes. Each is past the hash context's 128 bytes, so freeing it
// gives it back (agg_budget.hpp).
constexpr uint32_t kChunkCapacity = 290;

// Deduplicate when the hashes held exceed the estimated distinct count by this factor.
constexpr double kDeduplicateAbove = 1.5;

// A flat state's array starts with room for kFlatFirst hashes; one that would grow past kFlatMax
// moves its hashes to the buckets, whose 11 kB (the buckets and the sketch) and partly empty
// chunks then cost less than 8 bytes a hash more.
constexpr uint32_t kFlatFirst = 8;
constexpr uint32_t kFlatMax = 1u << 16;

// A hash is held in 7 bytes: its top byte is the bucket's number.
constexpr size_t kHeldHashBytes = 7;

struct HashChunk {
    HashChunk *next;
    uint32_t count;
    uint32_t capacity;
    uint8_t hashes[1];  // `capacity` x 7 bytes and a spare byte, allocated past the struct's end

    // The 7 bytes are moved as 8 (the eighth belongs to the next hash, or is the chunk's spare
    // byte, and is written back as it was): one load instead of seven.
    uint64_t get(uint32_t i, uint32_t bucket) const {
        const uint8_t *p = hashes + size_t(i) * kHeldHashBytes;
        return (load_u64(p) & kLow56) | (uint64_t(bucket) << 56);
    }
    void put(uint32_t i, uint64_t h) {
        uint8_t *p = hashes + size_t(i) * kHeldHashBytes;
        store_u64(p, (load_u64(p) & ~kLow56) | (h & kLow56));
    }
    static constexpr uint64_t kLow56 = (uint64_t(1) << 56) - 1;
};
static_assert(kBuckets == 256, "a held hash drops exactly the top byte, the bucket's number");

// Appending touches only the bucket (256 of them: 10 kB, which stays in cache), never the
// chunk's header: the last chunk's count is its capacity less `room`, and is written to its
// header only when another chunk follows it or the chunks are rearranged.
struct HashBucket {
    HashChunk *first;
    HashChunk *last;
    uint8_t *tail;  // where the next hash goes in the last chunk
    uint32_t room;  // free places left in the last chunk (0 without chunks)
    size_t count;

    uint32_t count_of(const HashChunk *chunk) const {
        return chunk == last ? chunk->capacity - room : chunk->count;
    }
    // Writes the last chunk's count to its header.
    void settle() {
        if (last) last->count = last->capacity - room;
    }
    // Appends after the last chunk's `count` hashes from now on.
    void resume() {
        room = last ? last->capacity - last->count : 0;
        tail = last ? last->hashes + size_t(last->count) * kHeldHashBytes : nullptr;
    }
    // The eighth byte belongs to a hash not written yet (or is the chunk's spare byte), so it is
    // overwritten without being read: reading it would wait on memory the chunk has never
    // touched.
    void append(uint64_t h) {
        store_u64(tail, h);
        tail += kHeldHashBytes;
        room--;
        count++;
    }
};

struct AggregateSpill;
struct AggregateBudget;

struct AggregateState {
    bool auto_sized;
    KeyKind kind;
    // Sized state.
    struct varlena *filter;
    Header header;
    // Auto-sized state.
    double error_rate;
    uint64_t inserted;  // non-NULL keys seen, duplicates included
    MemoryContext context;
    // Where its hashes, buckets and sketch are: a context of the budget's under `context`
    // (agg_budget.hpp).
    MemoryContext hashes;
    uint64_t held;  // hashes held in memory, flat or in the buckets
    // A flat state: null buckets and sketch, its hashes in flat (null when it has room for none).
    uint64_t *flat;
    uint32_t flat_capacity;
    HashBucket *buckets;  // kBuckets of them
    DistinctSketch *sketch;
    double distinct_estimate;  // the sketch's estimate when held was below estimate_again_at
    uint64_t estimate_again_at;
    size_t chunk_bytes;     // what the buckets' chunks take
    AggregateSpill *spill;  // null until the state first spills
    // The budget this state's memory counts against (null for a deserialized state, which only
    // lends its hashes to the combine function); the bytes it counts, and its place among the
    // budget's live states. on_reset takes it off the list when its memory context is reset.
    AggregateBudget *budget;
    size_t budget_bytes;
    AggregateState *budget_prev;
    AggregateState *budget_next;
    MemoryContextCallback on_reset;
    // A deserialized auto-sized state has no buckets: it reads its hashes in place, from the
    // serialized bytes (256 x u32 the count of each bucket, then the bucket's hashes).
    const uint8_t *serialized_buckets;
    // A deserialized spilled state: its hashes are in a file (agg_spill.hpp), `held` of them.
    const uint8_t *serialized_exported;
};

// The aggregate memory context; an error when called outside an aggregate.
MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char *name);
AggregateState *new_state(MemoryContext context, bool auto_sized, KeyKind kind);
// A flat state whose memory counts against `budget`.
AggregateState *new_auto_state(MemoryContext context, KeyKind kind, double error_rate,
                               AggregateBudget *budget);
void check_error_rate(double error_rate);
// Copies a filter into the aggregate context as a new sized state.
AggregateState *sized_state_from(MemoryContext context, KeyKind kind, struct varlena *filter,
                                 const Header &header);
// Holds a key's hash and counts the key.
void collect(AggregateState *state, uint64_t h);
// Whether the input repeats itself enough for deduplicating to pay.
bool repeats_enough(AggregateState *state);
// Deduplicates every bucket (count_only: only counts); returns the number of distinct hashes.
uint64_t deduplicate_all(AggregateState *state, bool count_only);
// Appends a copy of every hash of `source` to `target`, bucket by bucket in one chunk each (or
// hash by hash, spilling, past the target's memory limit).
void copy_hashes(AggregateState *target, AggregateState *source);
// Frees every hash held, and the buckets and sketch of a bucketed state, which is flat again: the
// count of keys stays.
void release_held(AggregateState *state);
// The bytes the state's hashes take in memory: a flat state's array, or the buckets, the sketch
// and the chunks.
size_t held_bytes(const AggregateState *state);

// Calls use(h) for every hash held, bucket by bucket.
template <typename Use>
void for_each_hash(const AggregateState *state, Use &&use) {
    if (state->buckets == nullptr) {
        for (uint64_t i = 0; i < state->held; i++) use(state->flat[i]);
        return;
    }
    for (uint32_t b = 0; b < kBuckets; b++) {
        const HashBucket &bucket = state->buckets[b];
        for (const HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next)
            for (uint32_t i = 0, n = bucket.count_of(chunk); i < n; i++) use(chunk->get(i, b));
    }
}

}  // namespace bloomfilter
