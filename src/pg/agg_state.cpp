// The hash container of the auto-sized aggregate states (see agg_state.hpp).
#include "agg_state.hpp"

#include "agg_budget.hpp"
#include "agg_spill.hpp"

extern "C" {
#include "access/xact.h"
}

namespace bloomfilter {

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char *name) {
    MemoryContext context;
    if (!AggCheckCallContext(fcinfo, &context))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s called in a non-aggregate context", name)));
    return context;
}

AggregateState *new_state(MemoryContext context, bool auto_sized, KeyKind kind) {
    AggregateState *state =
        static_cast<AggregateState *>(MemoryContextAllocZero(context, sizeof(AggregateState)));
    state->auto_sized = auto_sized;
    state->kind = kind;
    return state;
}

void check_error_rate(double error_rate) {
    if (!(error_rate > 0.0 && error_rate < 1.0))
        report_parameters(Status::error_rate_out_of_range, 0, error_rate);
}

AggregateState *new_auto_state(MemoryContext context, KeyKind kind, double error_rate,
                               AggregateBudget *budget) {
    check_error_rate(error_rate);
    AggregateState *state = new_state(context, true, kind);
    state->error_rate = error_rate;
    state->context = context;
    // The leader of a parallel plan, aggregating rows itself: partial states may come to it in
    // files.
    if (IsInParallelMode()) expect_exported_files();
    budget_join(budget, state);
    return state;
}

namespace {

inline HashBucket &bucket_of(AggregateState *state, uint64_t h) {
    return state->buckets[h >> (64 - kBucketBits)];
}

uint32_t next_chunk_capacity(const HashBucket &) { return kChunkCapacity; }

size_t chunk_size(uint32_t capacity) {
    return offsetof(HashChunk, hashes) + size_t(capacity) * kHeldHashBytes + 1;
}

void free_chunk(AggregateState *state, HashChunk *chunk) {
    state->chunk_bytes -= chunk_size(chunk->capacity);
    pfree(chunk);
}

// Appends an empty chunk for `capacity` hashes to the bucket.
void add_chunk(AggregateState *state, HashBucket &bucket, uint32_t capacity) {
    HashChunk *chunk =
        static_cast<HashChunk *>(MemoryContextAllocHuge(state->hashes, chunk_size(capacity)));
    state->chunk_bytes += chunk_size(capacity);
    chunk->next = nullptr;
    chunk->count = 0;
    chunk->capacity = capacity;
    bucket.settle();
    if (bucket.last)
        bucket.last->next = chunk;
    else
        bucket.first = chunk;
    bucket.last = chunk;
    bucket.resume();
}

// Keeps the first of equal hashes, compacting the bucket's chunks in place (the write position
// never passes the read position) and freeing the chunks left empty. `set` has room for
// bucket.count hashes.
void deduplicate(AggregateState *state, HashBucket &bucket, uint64_t *set_slots) {
    if (bucket.count == 0) return;
    bucket.settle();
    HashSet set(set_slots, HashSet::slots_for(bucket.count));
    const uint32_t number = uint32_t(&bucket - state->buckets);
    HashChunk *write = bucket.first;
    uint32_t write_index = 0;
    for (HashChunk *read = bucket.first; read != nullptr; read = read->next) {
        for (uint32_t i = 0; i < read->count; i++) {
            const uint64_t h = read->get(i, number);
            if (!set.insert(h)) continue;
            if (write_index == write->capacity) {
                write->count = write_index;
                write = write->next;
                write_index = 0;
            }
            write->put(write_index++, h);
        }
    }
    write->count = write_index;
    for (HashChunk *chunk = write->next; chunk != nullptr;) {
        HashChunk *next = chunk->next;
        free_chunk(state, chunk);
        chunk = next;
    }
    write->next = nullptr;
    bucket.last = write;
    bucket.resume();
    size_t kept = 0;
    for (HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next)
        kept += chunk->count;
    state->held -= bucket.count - kept;
    bucket.count = kept;
}

}  // namespace

// Whether the input repeats itself enough for deduplicating to pay. The sketch's estimate takes a
// pass over its registers, so it is taken again only after the hashes held grow by an eighth.
bool repeats_enough(AggregateState *state) {
    if (state->held >= state->estimate_again_at) {
        state->distinct_estimate = state->sketch->estimate();
        state->estimate_again_at = state->held + state->held / 8 + 1;
    }
    return double(state->held) > kDeduplicateAbove * state->distinct_estimate;
}

namespace {

bool last_chunk_full(const HashBucket &bucket) { return bucket.room == 0; }

// A flat state's hashes go to the buckets, each bucket's in one chunk of its size, and into a new
// sketch; the array is freed.
void move_to_buckets(AggregateState *state) {
    uint32_t counts[kBuckets] = {0};
    for (uint64_t i = 0; i < state->held; i++) counts[state->flat[i] >> (64 - kBucketBits)]++;
    size_t bytes = kBuckets * sizeof(HashBucket) + sizeof(DistinctSketch);
    for (uint32_t b = 0; b < kBuckets; b++)
        if (counts[b] > 0) bytes += chunk_size(counts[b]);
    // The budget may spill this state first: then it stays flat, and empty.
    budget_make_room(state, bytes);
    if (state->held == 0) return;
    state->buckets = static_cast<HashBucket *>(
        MemoryContextAllocZero(state->hashes, kBuckets * sizeof(HashBucket)));
    state->sketch = static_cast<DistinctSketch *>(
        MemoryContextAllocZero(state->hashes, sizeof(DistinctSketch)));
    for (uint32_t b = 0; b < kBuckets; b++)
        if (counts[b] > 0) add_chunk(state, state->buckets[b], counts[b]);
    for (uint64_t i = 0; i < state->held; i++) {
        const uint64_t h = state->flat[i];
        bucket_of(state, h).append(h);
        state->sketch->add(h);
    }
    pfree(state->flat);
    state->flat = nullptr;
    state->flat_capacity = 0;
    budget_update(state);
}

// A full flat array: sorted and deduplicated in place, it grows only when that frees less than a
// quarter of it; past kFlatMax, or at the budget's bidding, its hashes move to the buckets.
void make_flat_room(AggregateState *state) {
    if (state->flat_capacity >= 64) {
        const size_t distinct = sort_unique(state->flat, state->held);
        state->held = distinct;
        if (distinct <= state->flat_capacity / 4 * 3) return;
    }
    if (state->flat_capacity >= kFlatMax) {
        move_to_buckets(state);
        return;
    }
    // The budget may spill this state itself, which frees its array.
    budget_make_room(state, size_t(Max(kFlatFirst, state->flat_capacity)) * sizeof(uint64_t));
    if (state->held < state->flat_capacity) return;
    const uint32_t grown = state->flat_capacity == 0 ? kFlatFirst : 2 * state->flat_capacity;
    const size_t bytes = size_t(grown) * sizeof(uint64_t);
    state->flat =
        static_cast<uint64_t *>(state->flat == nullptr ? MemoryContextAlloc(state->hashes, bytes)
                                                       : repalloc(state->flat, bytes));
    state->flat_capacity = grown;
    budget_update(state);
}

void hold(AggregateState *state, uint64_t h) {
    if (state->buckets == nullptr) {
        while (state->buckets == nullptr && state->held == state->flat_capacity)
            make_flat_room(state);
        if (state->buckets == nullptr) {
            state->flat[state->held++] = h;
            return;
        }
    }
    HashBucket &bucket = bucket_of(state, h);
    if (last_chunk_full(bucket)) {
        // Before growing a bucket of a repetitive input, drop its repeats.
        if (bucket.count > 0 && repeats_enough(state)) {
            uint64_t *slots = static_cast<uint64_t *>(palloc_extended(
                HashSet::slots_for(bucket.count) * sizeof(uint64_t), MCXT_ALLOC_HUGE));
            deduplicate(state, bucket, slots);
            pfree(slots);
        }
        if (last_chunk_full(bucket)) {
            // Past the budget, the largest states' hashes go to runs on disk, perhaps this
            // state's, this bucket's too.
            budget_make_room(state, chunk_size(next_chunk_capacity(bucket)));
            if (state->buckets == nullptr) {  // spilled: flat again
                hold(state, h);
                return;
            }
            add_chunk(state, bucket, next_chunk_capacity(bucket));
            budget_update(state);
        }
    }
    bucket.append(h);
    state->held++;
    state->sketch->add(h);
}

}  // namespace

void collect(AggregateState *state, uint64_t h) {
    hold(state, h);
    state->inserted++;
}

// Deduplicates every bucket (count_only: only counts, leaving the repeats where they are, which
// adding to a filter twice makes harmless); returns the number of distinct hashes. One scratch
// set, sized for the largest bucket (about 1/128 of the hashes), serves them all.
uint64_t deduplicate_all(AggregateState *state, bool count_only) {
    // A flat state is sorted in place, which leaves its hashes what they were.
    if (state->buckets == nullptr) return state->held = sort_unique(state->flat, state->held);
    size_t largest = 0;
    for (uint32_t b = 0; b < kBuckets; b++) largest = Max(largest, state->buckets[b].count);
    if (largest == 0) return 0;
    uint64_t *slots = static_cast<uint64_t *>(
        palloc_extended(HashSet::slots_for(largest) * sizeof(uint64_t), MCXT_ALLOC_HUGE));
    uint64_t distinct = 0;
    for (uint32_t b = 0; b < kBuckets; b++) {
        if ((b & 15) == 15) CHECK_FOR_INTERRUPTS();
        HashBucket &bucket = state->buckets[b];
        if (!count_only) {
            deduplicate(state, bucket, slots);
            distinct += bucket.count;
            continue;
        }
        if (bucket.count == 0) continue;
        HashSet set(slots, HashSet::slots_for(bucket.count));
        constexpr uint32_t kAhead = 8;  // prefetch distance, in hashes
        for (const HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next) {
            const uint32_t n = bucket.count_of(chunk);
            for (uint32_t i = 0; i < n; i++) {
                if (i + kAhead < n) set.prefetch(chunk->get(i + kAhead, b));
                distinct += set.insert(chunk->get(i, b));
            }
        }
    }
    pfree(slots);
    return distinct;
}

// Copies a filter into the aggregate context as a new sized state.
AggregateState *sized_state_from(MemoryContext context, KeyKind kind, struct varlena *filter,
                                 const Header &header) {
    AggregateState *state = new_state(context, false, kind);
    Size size = VARSIZE(filter);
    state->filter = static_cast<struct varlena *>(MemoryContextAllocHuge(context, size));
    memcpy(state->filter, filter, size);
    state->header = header;
    return state;
}

namespace {

// Room for `count` more hashes in bucket `b`: a new last chunk of exactly that size, its
// hashes to be written by the caller.
uint8_t *append_room(AggregateState *state, uint32_t b, uint32_t count) {
    HashBucket &bucket = state->buckets[b];
    add_chunk(state, bucket, count);
    bucket.last->count = count;
    bucket.resume();
    bucket.count += count;
    state->held += count;
    return bucket.last->hashes;
}

}  // namespace

size_t held_bytes(const AggregateState *state) {
    if (state->buckets == nullptr) return size_t(state->flat_capacity) * sizeof(uint64_t);
    return kBuckets * sizeof(HashBucket) + sizeof(DistinctSketch) + state->chunk_bytes;
}

// A bucketed state becomes flat again: what it holds next starts small, in sizes every state
// uses, and an array past 8 kB is given back to the system when freed, so spilling frees memory
// for good.
void release_held(AggregateState *state) {
    if (state->flat != nullptr) pfree(state->flat);
    state->flat = nullptr;
    state->flat_capacity = 0;
    if (state->buckets != nullptr) {
        for (uint32_t b = 0; b < kBuckets; b++) {
            HashBucket &bucket = state->buckets[b];
            for (HashChunk *chunk = bucket.first; chunk != nullptr;) {
                HashChunk *next = chunk->next;
                free_chunk(state, chunk);
                chunk = next;
            }
        }
        pfree(state->buckets);
        pfree(state->sketch);
        state->buckets = nullptr;
        state->sketch = nullptr;
        state->distinct_estimate = 0;
        state->estimate_again_at = 0;
    }
    state->held = 0;
    budget_update(state);
}

namespace {

// Whether `count` hashes go to the target's buckets as one chunk: the budget has room for it
// (after spilling, perhaps). A flat target takes few hashes one by one, and moves to the
// buckets before more.
bool room_for_chunk(AggregateState *target, size_t count) {
    if (count > PG_UINT32_MAX / 8) return false;
    if (target->buckets == nullptr) {
        if (target->held + count <= kFlatMax) return false;
        move_to_buckets(target);
        if (target->buckets == nullptr) return false;
    }
    // The target may be spilled, and flat again.
    return budget_make_room(target, chunk_size(uint32_t(count))) && target->buckets != nullptr;
}

}  // namespace

// Appends a copy of every hash of `source` to `target`, bucket by bucket in one chunk each; a
// bucket the budget has no room for goes hash by hash, as the transition adds them, spilling.
// `source` is only read (a spilled one has its runs merged, which leaves its hashes as they were).
void copy_hashes(AggregateState *target, AggregateState *source) {
    if (source->serialized_exported != nullptr) {
        for_each_exported_hash(source->serialized_exported,
                               [target](uint64_t h) { hold(target, h); });
    } else if (source->serialized_buckets != nullptr) {
        const uint8_t *counts = source->serialized_buckets;
        const uint8_t *in = counts + 4 * kBuckets;
        for (uint32_t b = 0; b < kBuckets; b++) {
            const uint32_t count = load_u32(counts + 4 * b);
            if (count == 0) continue;
            if (room_for_chunk(target, count)) {
                memcpy(append_room(target, b, count), in, size_t(count) * kHeldHashBytes);
                budget_update(target);
                in += size_t(count) * kHeldHashBytes;
                continue;
            }
            for (uint32_t i = 0; i < count; i++, in += kHeldHashBytes) {
                if ((i & 65535) == 65535) CHECK_FOR_INTERRUPTS();
                uint8_t bytes[8] = {0};
                memcpy(bytes, in, kHeldHashBytes);
                hold(target, load_u64(bytes) | (uint64_t(b) << 56));
            }
        }
    } else if (source->spill != nullptr) {
        spill_finish(source);
        for_each_spilled_hash(source, [target](uint64_t h) { hold(target, h); });
    } else if (source->buckets == nullptr) {
        for (uint64_t i = 0; i < source->held; i++) hold(target, source->flat[i]);
    } else {
        for (uint32_t b = 0; b < kBuckets; b++) {
            const HashBucket &from = source->buckets[b];
            if (from.count == 0) continue;
            if (!room_for_chunk(target, from.count)) {
                for (const HashChunk *chunk = from.first; chunk != nullptr; chunk = chunk->next)
                    for (uint32_t i = 0, n = from.count_of(chunk); i < n; i++)
                        hold(target, chunk->get(i, b));
                continue;
            }
            uint8_t *out = append_room(target, b, uint32_t(from.count));
            for (const HashChunk *chunk = from.first; chunk != nullptr; chunk = chunk->next) {
                const size_t bytes = size_t(from.count_of(chunk)) * kHeldHashBytes;
                memcpy(out, chunk->hashes, bytes);
                out += bytes;
            }
            budget_update(target);
        }
    }
    target->inserted += source->inserted;
    if (target->sketch != nullptr && source->sketch != nullptr)
        target->sketch->merge(*source->sketch);
}

}  // namespace bloomfilter
