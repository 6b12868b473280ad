// The hash container of the auto-sized aggregate states (see agg_state.hpp).
#include "agg_state.hpp"

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

AggregateState *new_auto_state(MemoryContext context, KeyKind kind, double error_rate) {
    check_error_rate(error_rate);
    AggregateState *state = new_state(context, true, kind);
    state->error_rate = error_rate;
    state->context = context;
    state->memory_limit = hash_memory_limit();
    // The leader of a parallel plan, aggregating rows itself: partial states may come to it in
    // files.
    if (IsInParallelMode()) expect_exported_files();
    state->buckets =
        static_cast<HashBucket *>(MemoryContextAllocZero(context, kBuckets * sizeof(HashBucket)));
    state->sketch =
        static_cast<DistinctSketch *>(MemoryContextAllocZero(context, sizeof(DistinctSketch)));
    return state;
}

namespace {

inline HashBucket &bucket_of(AggregateState *state, uint64_t h) {
    return state->buckets[h >> (64 - kBucketBits)];
}

// The next chunk of a growing bucket: one size up the ladder from its last chunk, or the largest
// size again.
uint32_t next_chunk_capacity(const HashBucket &bucket) {
    if (bucket.last == nullptr) return kChunkCapacities[0];
    for (uint32_t next : kChunkCapacities)
        if (next > bucket.last->capacity) return next;
    return kChunkCapacities[lengthof(kChunkCapacities) - 1];
}

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
        static_cast<HashChunk *>(MemoryContextAllocHuge(state->context, chunk_size(capacity)));
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

void hold(AggregateState *state, uint64_t h) {
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
            // Past the memory limit, everything held goes to a run on disk, this bucket too.
            if (state->chunk_bytes + chunk_size(next_chunk_capacity(bucket)) > state->memory_limit)
                spill_held(state);
            add_chunk(state, bucket, next_chunk_capacity(bucket));
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

void release_held(AggregateState *state) {
    for (uint32_t b = 0; b < kBuckets; b++) {
        HashBucket &bucket = state->buckets[b];
        for (HashChunk *chunk = bucket.first; chunk != nullptr;) {
            HashChunk *next = chunk->next;
            free_chunk(state, chunk);
            chunk = next;
        }
        bucket = HashBucket{};
    }
    state->held = 0;
}

namespace {

bool fits(const AggregateState *target, size_t count) {
    return target->chunk_bytes + chunk_size(uint32_t(Min(count, size_t(PG_UINT32_MAX / 8)))) <=
           target->memory_limit;
}

}  // namespace

// Appends a copy of every hash of `source` to `target`, bucket by bucket in one chunk each; a
// bucket that would take the target past its memory limit goes hash by hash, as the transition
// adds them, spilling. `source` is only read (a spilled one has its runs merged, which leaves
// its hashes as they were).
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
            if (fits(target, count)) {
                memcpy(append_room(target, b, count), in, size_t(count) * kHeldHashBytes);
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
        spill_finish(source, nullptr);
        for_each_spilled_hash(source, [target](uint64_t h) { hold(target, h); });
    } else {
        for (uint32_t b = 0; b < kBuckets; b++) {
            const HashBucket &from = source->buckets[b];
            if (from.count == 0) continue;
            if (!fits(target, from.count)) {
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
        }
    }
    target->inserted += source->inserted;
    target->sketch->merge(*source->sketch);
}

}  // namespace bloomfilter
