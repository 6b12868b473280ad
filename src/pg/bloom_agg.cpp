// The aggregates bloom_agg and bloom_union_agg, with combine, serialize and deserialize
// functions for parallel plans.
//
// Two kinds of state, both in the aggregate memory context and updated in place (a state made
// by the deserialize function lives in the per-row memory PostgreSQL gives it, and the combine
// function copies what it needs from it):
// - sized (bloom_agg(value, capacity, error_rate) and bloom_union_agg): the filter itself, its
//   header (counter included) kept up to date in its bytes;
// - auto-sized (bloom_agg(value), bloom_agg(value, error_rate)): the distinct 64-bit hashes of
//   the keys (format version 2's), held in 7 bytes each, from which the final function sizes the
//   filter for their number.
//   They are appended to 256 buckets by their top bits (appends stay in cache, and each bucket
//   is deduplicated on its own, in cache, at the end). A bucket is a list of chunks, so growing
//   never copies and at most its last chunk is partly empty; it is deduplicated before it grows
//   only when a HyperLogLog sketch says the input repeats itself, so memory follows the number
//   of distinct keys without deduplicating a mostly distinct input more than once.
#include "glue.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_rate_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_sized_transfn);
PG_FUNCTION_INFO_V1(bloom_union_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_finalfn);
PG_FUNCTION_INFO_V1(bloom_agg_combinefn);
PG_FUNCTION_INFO_V1(bloom_agg_serialfn);
PG_FUNCTION_INFO_V1(bloom_agg_deserialfn);
}

namespace {

constexpr double kDefaultErrorRate = 0.01;
// The format of the filters the auto-sized form builds: its held hashes are this version's.
constexpr uint32_t kAutoVersion = kFormatVersion2;
constexpr uint32_t kBucketBits = 8;
constexpr uint32_t kBuckets = 1u << kBucketBits;
// Chunks grow from 70 hashes to 290 (2 KB): small groups stay small, and the partly empty last
// chunks of all buckets add at most 0.5 MB, 0.25 MB on average. With the 16-byte chunk header
// and the spare byte each size stays just under a power of two, as the memory context rounds it.
constexpr uint32_t kChunkCapacities[] = {70, 143, 290};

// Deduplicate when the hashes held exceed the estimated distinct count by this factor.
constexpr double kDeduplicateAbove = 1.5;

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
    HashBucket *buckets;  // kBuckets of them
    uint64_t held;        // hashes held in all buckets
    DistinctSketch *sketch;
    double distinct_estimate;  // the sketch's estimate when held was below estimate_again_at
    uint64_t estimate_again_at;
    // A deserialized auto-sized state has no buckets: it reads its hashes in place, from the
    // serialized bytes (256 x u32 the count of each bucket, then the bucket's hashes).
    const uint8_t *serialized_buckets;
};

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
    state->buckets =
        static_cast<HashBucket *>(MemoryContextAllocZero(context, kBuckets * sizeof(HashBucket)));
    state->sketch =
        static_cast<DistinctSketch *>(MemoryContextAllocZero(context, sizeof(DistinctSketch)));
    return state;
}

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

// Appends an empty chunk for `capacity` hashes to the bucket.
void add_chunk(AggregateState *state, HashBucket &bucket, uint32_t capacity) {
    HashChunk *chunk = static_cast<HashChunk *>(MemoryContextAllocHuge(
        state->context, offsetof(HashChunk, hashes) + size_t(capacity) * kHeldHashBytes + 1));
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
        pfree(chunk);
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

// Whether the input repeats itself enough for deduplicating to pay. The sketch's estimate takes a
// pass over its registers, so it is taken again only after the hashes held grow by an eighth.
bool repeats_enough(AggregateState *state) {
    if (state->held >= state->estimate_again_at) {
        state->distinct_estimate = state->sketch->estimate();
        state->estimate_again_at = state->held + state->held / 8 + 1;
    }
    return double(state->held) > kDeduplicateAbove * state->distinct_estimate;
}

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
        if (last_chunk_full(bucket)) add_chunk(state, bucket, next_chunk_capacity(bucket));
    }
    bucket.append(h);
    state->held++;
    state->sketch->add(h);
}

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

// Calls use(h) for every hash held, bucket by bucket.
template <typename Use>
void for_each_hash(const AggregateState *state, Use &&use) {
    for (uint32_t b = 0; b < kBuckets; b++) {
        const HashBucket &bucket = state->buckets[b];
        for (const HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next)
            for (uint32_t i = 0, n = bucket.count_of(chunk); i < n; i++) use(chunk->get(i, b));
    }
}

AggregateState *auto_transition(FunctionCallInfo fcinfo, double error_rate) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_transfn");
    AggregateState *state =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (state == nullptr)
        state = new_auto_state(context, key_kind_of(get_fn_expr_argtype(fcinfo->flinfo, 1)),
                               error_rate);
    if (!PG_ARGISNULL(1)) collect(state, hash_key(PG_GETARG_DATUM(1), state->kind, kAutoVersion).low);
    return state;
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

}  // namespace

extern "C" Datum bloom_agg_transfn(PG_FUNCTION_ARGS) {
    PG_RETURN_POINTER(auto_transition(fcinfo, kDefaultErrorRate));
}

// The error rate of the first row is used; it must be in (0, 1).
extern "C" Datum bloom_agg_rate_transfn(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) && PG_ARGISNULL(2))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("error_rate of bloom_agg must not be NULL")));
    PG_RETURN_POINTER(auto_transition(fcinfo, PG_ARGISNULL(2) ? 0 : PG_GETARG_FLOAT8(2)));
}

// Capacity and error rate come from the first row.
extern "C" Datum bloom_agg_sized_transfn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_sized_transfn");
    AggregateState *state =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (state == nullptr) {
        if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("capacity and error_rate of bloom_agg must not be NULL")));
        int64 capacity = PG_GETARG_INT64(2);
        double error_rate = PG_GETARG_FLOAT8(3);
        Parameters parameters;
        Status status = capacity < 1 ? Status::capacity_out_of_range
                                     : size_filter(uint64_t(capacity), error_rate, &parameters);
        report_parameters(status, capacity, error_rate);
        state = new_state(context, false, key_kind_of(get_fn_expr_argtype(fcinfo->flinfo, 1)));
        MemoryContext previous = MemoryContextSwitchTo(context);
        state->filter = make_filter(parameters);
        MemoryContextSwitchTo(previous);
        state->header.parameters = parameters;
    }
    if (!PG_ARGISNULL(1)) {
        FilterRef ref = FilterRef::of(bloom_bytes(state->filter), state->header.parameters);
        ref.add(hash_key(PG_GETARG_DATUM(1), state->kind, ref.version));
        add_inserted(bloom_bytes(state->filter), 1);
    }
    PG_RETURN_POINTER(state);
}

extern "C" Datum bloom_union_agg_transfn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_union_agg_transfn");
    AggregateState *state =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (PG_ARGISNULL(1)) {
        if (state == nullptr) PG_RETURN_NULL();
        PG_RETURN_POINTER(state);
    }
    Header header;
    struct varlena *filter = read_filter(PG_GETARG_DATUM(1), &header);
    if (state == nullptr) {
        state = sized_state_from(context, KeyKind::bytes, filter, header);
    } else {
        union_into(state->filter, state->filter, state->header, filter, header);
    }
    PG_RETURN_POINTER(state);
}

// Only reads the state (counting the distinct hashes leaves them as they are), hence
// FINALFUNC_MODIFY = READ_ONLY.
extern "C" Datum bloom_agg_finalfn(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    // The state's filter itself, not a copy (which would double the memory): it lives until the
    // aggregate's result has been used, and window aggregates copy results before going on.
    if (!state->auto_sized) PG_RETURN_POINTER(state->filter);
    uint64_t distinct = deduplicate_all(state, true);
    if (distinct == 0) PG_RETURN_NULL();
    Parameters parameters;
    report_parameters(size_filter(distinct, state->error_rate, &parameters), int64(distinct),
                      state->error_rate);
    parameters.version = kAutoVersion;
    struct varlena *result = make_filter(parameters);
    FilterRef ref = FilterRef::of(bloom_bytes(result), parameters);
    // Bucket by bucket, the blocks written move forward through the filter.
    for_each_hash(state, [&ref](uint64_t h) { ref.add(KeyHash{h, 0}); });
    write_inserted(bloom_bytes(result), state->inserted);
    PG_RETURN_POINTER(result);
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

// Appends a copy of every hash of `source` to `target`, bucket by bucket in one chunk each.
void copy_hashes(AggregateState *target, const AggregateState *source) {
    if (source->serialized_buckets != nullptr) {
        const uint8_t *counts = source->serialized_buckets;
        const uint8_t *in = counts + 4 * kBuckets;
        for (uint32_t b = 0; b < kBuckets; b++) {
            const uint32_t count = load_u32(counts + 4 * b);
            if (count == 0) continue;
            memcpy(append_room(target, b, count), in, size_t(count) * kHeldHashBytes);
            in += size_t(count) * kHeldHashBytes;
        }
    } else {
        for (uint32_t b = 0; b < kBuckets; b++) {
            const HashBucket &from = source->buckets[b];
            if (from.count == 0) continue;
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

}  // namespace

// Copies what it needs from the source state, which it never changes: the source may be a
// deserialized state in per-row memory, or another process's partial state read in place.
extern "C" Datum bloom_agg_combinefn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_combinefn");
    AggregateState *target =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    const AggregateState *source =
        PG_ARGISNULL(1) ? nullptr : reinterpret_cast<const AggregateState *>(PG_GETARG_POINTER(1));
    if (source == nullptr) {
        if (target == nullptr) PG_RETURN_NULL();
        PG_RETURN_POINTER(target);
    }
    if (target == nullptr) {
        if (!source->auto_sized)
            PG_RETURN_POINTER(
                sized_state_from(context, source->kind, source->filter, source->header));
        target = new_auto_state(context, source->kind, source->error_rate);
    }
    if (target->auto_sized != source->auto_sized)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("cannot combine bloom aggregate states of different kinds")));
    if (target->auto_sized)
        copy_hashes(target, source);
    else
        union_into(target->filter, target->filter, target->header, source->filter, source->header);
    PG_RETURN_POINTER(target);
}

// Serialized state, little-endian:
//   u8 kind (4 auto-sized, 2 sized; 1 and 3 are not used), u8 key kind, then
//   auto-sized: f64 error_rate, u64 inserted, u64 count, the sketch's 1024 registers,
//     256 x u32 the hashes of each bucket, then count x 7 bytes: the held hashes bucket by
//     bucket, as chunks hold them (the bucket's number is each hash's missing top byte);
//   sized: the filter's encoding.
// A state goes from a worker to the leader of the same server, but the layout is fixed anyway.
constexpr uint8_t kSerialAutoBefore12 = 1, kSerialSized = 2, kSerialAuto = 4;
constexpr size_t kSerialAutoHeader = 2 + 8 + 8 + 8;
constexpr size_t kSerialSketchBytes = sizeof(DistinctSketch::registers);
constexpr size_t kSerialAutoFixed = kSerialAutoHeader + kSerialSketchBytes + 4 * kBuckets;

// A serialized state is a bytea, which holds at most 1 GB, and it travels inside a tuple whose
// few bytes of header must fit too: more than about 153M distinct hashes in one process cannot
// reach the leader. (The largest filter, 1,073,741,348 bytes, fits with 469 bytes to spare.)
constexpr Size kMaxSerializedBytes = MaxAllocSize - 256;

bool serialized_size_fits(Size size) { return size <= kMaxSerializedBytes; }

void check_serialized_size(Size size) {
    if (!serialized_size_fits(size))
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("bloom_agg state of %zu bytes is too large to pass between parallel "
                        "processes",
                        size),
                 errhint("Run it without parallel workers: SET max_parallel_workers_per_gather "
                         "= 0.")));
}

extern "C" Datum bloom_agg_serialfn(PG_FUNCTION_ARGS) {
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    Size size;
    bytea *result;
    if (state->auto_sized) {
        // Drop repeats first only when the sketch says there are enough of them to matter: a
        // mostly distinct input is sent as it is, and the leader counts distinct hashes anyway.
        // A state too large to send is deduplicated anyway before giving up.
        if (state->held > 0 &&
            (repeats_enough(state) ||
             !serialized_size_fits(VARHDRSZ + kSerialAutoFixed + state->held * kHeldHashBytes)))
            deduplicate_all(state, false);
        size = VARHDRSZ + kSerialAutoFixed + state->held * kHeldHashBytes;
        check_serialized_size(size);
        result = static_cast<bytea *>(palloc_extended(size, MCXT_ALLOC_HUGE));
        uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
        out[0] = kSerialAuto;
        out[1] = uint8_t(state->kind);
        uint64_t rate_bits;
        memcpy(&rate_bits, &state->error_rate, 8);
        store_u64(out + 2, rate_bits);
        store_u64(out + 10, state->inserted);
        store_u64(out + 18, state->held);
        out += kSerialAutoHeader;
        memcpy(out, state->sketch->registers, kSerialSketchBytes);
        out += kSerialSketchBytes;
        for (uint32_t b = 0; b < kBuckets; b++, out += 4)
            store_u32(out, uint32_t(state->buckets[b].count));
        for (uint32_t b = 0; b < kBuckets; b++) {
            const HashBucket &bucket = state->buckets[b];
            for (const HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next) {
                memcpy(out, chunk->hashes, size_t(bucket.count_of(chunk)) * kHeldHashBytes);
                out += size_t(bucket.count_of(chunk)) * kHeldHashBytes;
            }
        }
    } else {
        size_t length = bloom_length(state->filter);
        size = VARHDRSZ + 2 + length;
        check_serialized_size(size);
        result = static_cast<bytea *>(palloc_extended(size, MCXT_ALLOC_HUGE));
        uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
        out[0] = kSerialSized;
        out[1] = uint8_t(state->kind);
        memcpy(out + 2, bloom_bytes(state->filter), length);
    }
    SET_VARSIZE(result, size);
    PG_RETURN_BYTEA_P(result);
}


static void report_bad_state(const char *why) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                    errmsg("invalid serialized bloom aggregate state: %s", why)));
}

// The state is made in the current memory context, which PostgreSQL resets for every row, and
// an auto-sized one reads its hashes where the serialized bytes hold them: the combine function
// copies them into the aggregate's state, and nothing of the row is kept.
extern "C" Datum bloom_agg_deserialfn(PG_FUNCTION_ARGS) {
    aggregate_context(fcinfo, "bloom_agg_deserialfn");
    MemoryContext context = CurrentMemoryContext;
    bytea *serialized = PG_GETARG_BYTEA_PP(0);
    const uint8_t *in = reinterpret_cast<const uint8_t *>(VARDATA_ANY(serialized));
    const size_t length = VARSIZE_ANY_EXHDR(serialized);
    if (length < 2) report_bad_state("too short");
    uint8_t kind = in[1];
    if (kind != uint8_t(KeyKind::bytes) && kind != uint8_t(KeyKind::int8) &&
        kind != uint8_t(KeyKind::uuid))
        report_bad_state("unknown key kind");
    if (in[0] == kSerialSized) {
        Header header;
        validate_or_report(in + 2, length - 2, Origin::binary_input, &header);
        AggregateState *state = new_state(context, false, KeyKind(kind));
        state->filter =
            static_cast<struct varlena *>(MemoryContextAllocHuge(context, VARHDRSZ + length - 2));
        SET_VARSIZE(state->filter, VARHDRSZ + length - 2);
        memcpy(bloom_bytes(state->filter), in + 2, length - 2);
        state->header = header;
        PG_RETURN_POINTER(state);
    }
    if (in[0] == kSerialAutoBefore12)
        report_bad_state("a state from a bloomfilter library before 1.2; every process of the "
                         "server must run the same library");
    if (in[0] != kSerialAuto) report_bad_state("unknown state kind");
    if (length < kSerialAutoFixed) report_bad_state("too short");
    uint64_t rate_bits = load_u64(in + 2);
    double error_rate;
    memcpy(&error_rate, &rate_bits, 8);
    const uint64_t count = load_u64(in + 18);
    if (count > (length - kSerialAutoFixed) / kHeldHashBytes ||
        length != kSerialAutoFixed + count * kHeldHashBytes)
        report_bad_state("length does not match the number of hashes");
    const uint8_t *counts = in + kSerialAutoHeader + kSerialSketchBytes;
    uint64_t sum = 0;
    for (uint32_t b = 0; b < kBuckets; b++) sum += load_u32(counts + 4 * b);
    if (sum != count) report_bad_state("the buckets' counts do not add up to the number of hashes");
    check_error_rate(error_rate);
    AggregateState *state = new_state(context, true, KeyKind(kind));
    state->error_rate = error_rate;
    state->sketch = static_cast<DistinctSketch *>(palloc(sizeof(DistinctSketch)));
    memcpy(state->sketch->registers, in + kSerialAutoHeader, kSerialSketchBytes);
    state->serialized_buckets = counts;
    state->held = count;
    state->inserted = load_u64(in + 10);
    PG_RETURN_POINTER(state);
}
