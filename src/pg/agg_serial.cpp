// Serialization of the aggregate states, for parallel plans: bloom_agg_serialfn and
// bloom_agg_deserialfn.
#include "agg_spill.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_agg_serialfn);
PG_FUNCTION_INFO_V1(bloom_agg_deserialfn);
}

namespace {

// Serialized state, little-endian:
//   u8 kind (4 auto-sized, 2 sized; 1 and 3 are not used), u8 key kind, then
//   auto-sized: f64 error_rate, u64 inserted, u64 count, the sketch's 1024 registers,
//     256 x u32 the hashes of each bucket, then count x 7 bytes: the held hashes bucket by
//     bucket, as chunks hold them (the bucket's number is each hash's missing top byte);
//   spilled auto-sized (kind 5): the same header and sketch, then the FileSet of a file holding
//     the count distinct hashes (u64 each, in increasing order), which the reader deletes; a
//     spilled state of at most inline_spilled_bytes() of hashes goes as kind 4 instead;
//   sized: the filter's encoding.
// A state goes from a worker to the leader of the same server, but the layout is fixed anyway.
constexpr uint8_t kSerialAutoBefore12 = 1, kSerialSized = 2, kSerialAuto = 4, kSerialExported = 5;
constexpr size_t kSerialAutoHeader = 2 + 8 + 8 + 8;
constexpr size_t kSerialSketchBytes = sizeof(DistinctSketch::registers);
constexpr size_t kSerialAutoFixed = kSerialAutoHeader + kSerialSketchBytes + 4 * kBuckets;

// A serialized state is a bytea, which holds at most 1 GB, and it travels inside a tuple whose
// few bytes of header must fit too: more than about 153M distinct hashes held in memory are
// spilled and sent as a file, as a spilled state is. (The largest filter, 1,073,741,348 bytes,
// fits with 469 bytes to spare.)
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

// A spilled partial state whose distinct hashes take at most this goes inline, as one held in
// memory: a file costs the file system a directory and an inode made and deleted (about 1 ms when
// a parallel GROUP BY sends thousands), where copying the few thousand hashes of a small group
// costs microseconds. The value is made and sent one group at a time: a quarter of hash_mem.
size_t inline_spilled_bytes() { return Min(hash_memory_limit() / 4, size_t(1) << 20); }

// The header of an auto-sized state's serialized form: kind, key kind, error rate, keys added,
// distinct hashes held.
void write_auto_header(uint8_t *out, uint8_t serial_kind, const AggregateState *state,
                       uint64_t count) {
    out[0] = serial_kind;
    out[1] = uint8_t(state->kind);
    uint64_t rate_bits;
    memcpy(&rate_bits, &state->error_rate, 8);
    store_u64(out + 2, rate_bits);
    store_u64(out + 10, state->inserted);
    store_u64(out + 18, count);
}

// A spilled state's `count` distinct hashes inline (kind 4). They come in increasing order, so
// bucket after bucket, as the layout has them.
bytea *serialize_spilled_inline(AggregateState *state, uint64_t count) {
    const Size size = VARHDRSZ + kSerialAutoFixed + count * kHeldHashBytes;
    bytea *result = static_cast<bytea *>(palloc(size));
    uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
    write_auto_header(out, kSerialAuto, state, count);
    if (state->sketch != nullptr)
        memcpy(out + kSerialAutoHeader, state->sketch->registers, kSerialSketchBytes);
    else
        memset(out + kSerialAutoHeader, 0, kSerialSketchBytes);
    uint8_t *counts = out + kSerialAutoHeader + kSerialSketchBytes;
    uint8_t *hashes = counts + 4 * kBuckets;
    uint32_t bucket_counts[kBuckets] = {0};
    uint64_t written = 0;
    for_each_spilled_hash(state, [&](uint64_t h) {
        if (written == count) elog(ERROR, "bloom_agg spilled state has more hashes than counted");
        bucket_counts[h >> (64 - kBucketBits)]++;
        uint8_t bytes[8];
        store_u64(bytes, h);
        memcpy(hashes + written++ * kHeldHashBytes, bytes, kHeldHashBytes);
    });
    if (written != count) elog(ERROR, "bloom_agg spilled state has fewer hashes than counted");
    for (uint32_t b = 0; b < kBuckets; b++) store_u32(counts + 4 * b, bucket_counts[b]);
    SET_VARSIZE(result, size);
    return result;
}

}  // namespace

extern "C" Datum bloom_agg_serialfn(PG_FUNCTION_ARGS) {
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    Size size;
    bytea *result;
    if (state->auto_sized) {
        // Drop repeats first only when the sketch says there are enough of them to matter: a
        // mostly distinct input is sent as it is, and the leader counts distinct hashes anyway.
        // A state too large to send is deduplicated anyway before giving up.
        if (state->spill == nullptr && state->held > 0 &&
            (state->buckets == nullptr || repeats_enough(state) ||
             !serialized_size_fits(VARHDRSZ + kSerialAutoFixed + state->held * kHeldHashBytes)))
            deduplicate_all(state, false);
        // Too many distinct hashes for one value (a work_mem of gigabytes): they go the way of a
        // spilled state.
        if (state->spill == nullptr &&
            !serialized_size_fits(VARHDRSZ + kSerialAutoFixed + state->held * kHeldHashBytes))
            spill_held(state);
        if (state->spill != nullptr) {
            const uint64_t spilled = spill_finish(state);
            if (spilled * kHeldHashBytes <= inline_spilled_bytes())
                PG_RETURN_BYTEA_P(serialize_spilled_inline(state, spilled));
            // Spilled: its distinct hashes, merged from its runs, go in a file for the process
            // that combines it, and the state names the file (agg_spill.hpp).
            size = VARHDRSZ + kSerialAutoHeader + kSerialSketchBytes + kExportedBytes;
            result = static_cast<bytea *>(palloc0(size));
            uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
            const uint64_t count =
                spill_export(state, out + kSerialAutoHeader + kSerialSketchBytes);
            write_auto_header(out, kSerialExported, state, count);
            if (state->sketch != nullptr)
                memcpy(out + kSerialAutoHeader, state->sketch->registers, kSerialSketchBytes);
            SET_VARSIZE(result, size);
            PG_RETURN_BYTEA_P(result);
        }
        const uint64_t count = state->held;
        size = VARHDRSZ + kSerialAutoFixed + count * kHeldHashBytes;
        check_serialized_size(size);
        result = static_cast<bytea *>(palloc_extended(size, MCXT_ALLOC_HUGE));
        uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
        write_auto_header(out, kSerialAuto, state, count);
        out += kSerialAutoHeader;
        if (state->buckets == nullptr) {
            // A flat state: its sketch and its hashes bucket by bucket, made here.
            DistinctSketch *sketch = static_cast<DistinctSketch *>(palloc0(sizeof(DistinctSketch)));
            uint32_t counts[kBuckets] = {0};
            for (uint64_t i = 0; i < count; i++) {
                sketch->add(state->flat[i]);
                counts[state->flat[i] >> (64 - kBucketBits)]++;
            }
            memcpy(out, sketch->registers, kSerialSketchBytes);
            pfree(sketch);
            out += kSerialSketchBytes;
            size_t offsets[kBuckets];
            size_t offset = 0;
            for (uint32_t b = 0; b < kBuckets; b++, out += 4) {
                store_u32(out, counts[b]);
                offsets[b] = offset;
                offset += counts[b];
            }
            // The low 7 bytes of each hash, as a chunk holds them.
            for (uint64_t i = 0; i < count; i++) {
                const uint64_t h = state->flat[i];
                uint8_t bytes[8];
                store_u64(bytes, h);
                memcpy(out + offsets[h >> (64 - kBucketBits)]++ * kHeldHashBytes, bytes,
                       kHeldHashBytes);
            }
        } else {
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

namespace {

void report_bad_state(const char *why) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                    errmsg("invalid serialized bloom aggregate state: %s", why)));
}

}  // namespace

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
        if (is_layered(header)) report_bad_state("a layered filter");
        AggregateState *state = new_state(context, false, KeyKind(kind));
        state->filter =
            static_cast<struct varlena *>(MemoryContextAllocHuge(context, VARHDRSZ + length - 2));
        SET_VARSIZE(state->filter, VARHDRSZ + length - 2);
        memcpy(bloom_bytes(state->filter), in + 2, length - 2);
        state->header = header;
        PG_RETURN_POINTER(state);
    }
    if (in[0] == kSerialAutoBefore12)
        report_bad_state(
            "a state from a bloomfilter library before 1.2; every process of the "
            "server must run the same library");
    if (in[0] == kSerialExported) {
        if (length != kSerialAutoHeader + kSerialSketchBytes + kExportedBytes)
            report_bad_state("wrong length");
        const uint8_t *exported = in + kSerialAutoHeader + kSerialSketchBytes;
        if (!exported_for_me(exported)) report_bad_state("a file of another process");
        expect_exported_files();
        uint64_t rate_bits = load_u64(in + 2);
        double error_rate;
        memcpy(&error_rate, &rate_bits, 8);
        check_error_rate(error_rate);
        AggregateState *state = new_state(context, true, KeyKind(kind));
        state->error_rate = error_rate;
        state->sketch = static_cast<DistinctSketch *>(palloc(sizeof(DistinctSketch)));
        memcpy(state->sketch->registers, in + kSerialAutoHeader, kSerialSketchBytes);
        state->serialized_exported = exported;
        state->held = load_u64(in + 18);
        state->inserted = load_u64(in + 10);
        PG_RETURN_POINTER(state);
    }
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
