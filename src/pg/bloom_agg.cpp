// The aggregates bloom_agg and bloom_union_agg, with combine, serialize and deserialize
// functions for parallel plans.
//
// Two kinds of state, both in the aggregate memory context and updated in place:
// - sized (bloom_agg(value, capacity, error_rate) and bloom_union_agg): the filter itself, its
//   header (counter included) kept up to date in its bytes;
// - auto-sized (bloom_agg(value), bloom_agg(value, error_rate)): the distinct 128-bit hashes of
//   the keys, 16 bytes each, from which the final function sizes the filter for their number.
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
constexpr size_t kInitialHashes = 1024;

struct AggregateState {
    bool auto_sized;
    KeyKind kind;
    // Sized state.
    struct varlena *filter;
    Header header;
    // Auto-sized state: hashes[0, count) in room for `allocated`.
    double error_rate;
    uint64_t inserted;  // non-NULL keys seen, duplicates included
    Hash128 *hashes;
    size_t count;
    size_t allocated;
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
    state->allocated = kInitialHashes;
    state->hashes = static_cast<Hash128 *>(
        MemoryContextAlloc(context, kInitialHashes * sizeof(Hash128)));
    return state;
}

// Room for `more` hashes: deduplicate first, and grow only when that leaves the array over half
// full, so memory follows the number of distinct keys, not of rows.
void reserve_hashes(AggregateState *state, size_t more) {
    if (state->count + more <= state->allocated) return;
    state->count = sort_unique(state->hashes, state->count);
    size_t wanted = state->allocated;
    while (state->count + more > wanted / 2) wanted *= 2;
    if (wanted != state->allocated) {
        state->hashes = static_cast<Hash128 *>(repalloc_huge(state->hashes, wanted * sizeof(Hash128)));
        state->allocated = wanted;
    }
}

void collect(AggregateState *state, Hash128 h) {
    if (state->count == state->allocated) reserve_hashes(state, 1);
    state->hashes[state->count++] = h;
    state->inserted++;
}

AggregateState *auto_transition(FunctionCallInfo fcinfo, double error_rate) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_transfn");
    AggregateState *state = PG_ARGISNULL(0) ? nullptr
                                            : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (state == nullptr)
        state = new_auto_state(context, key_kind_of(get_fn_expr_argtype(fcinfo->flinfo, 1)),
                               error_rate);
    if (!PG_ARGISNULL(1)) collect(state, hash_key(PG_GETARG_DATUM(1), state->kind));
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
    AggregateState *state = PG_ARGISNULL(0) ? nullptr
                                            : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
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
        FilterRef::of(bloom_bytes(state->filter), state->header.parameters)
            .add(hash_key(PG_GETARG_DATUM(1), state->kind));
        add_inserted(bloom_bytes(state->filter), 1);
    }
    PG_RETURN_POINTER(state);
}

extern "C" Datum bloom_union_agg_transfn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_union_agg_transfn");
    AggregateState *state = PG_ARGISNULL(0) ? nullptr
                                            : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (PG_ARGISNULL(1)) PG_RETURN_POINTER(state);
    Header header;
    struct varlena *filter = read_filter(PG_GETARG_DATUM(1), &header);
    if (state == nullptr) {
        state = sized_state_from(context, KeyKind::bytes, filter, header);
    } else {
        union_into(state->filter, state->header, filter, header);
    }
    PG_RETURN_POINTER(state);
}

// Leaves the state valid for more transitions and further final calls (deduplicating the
// hashes changes nothing they stand for), hence FINALFUNC_MODIFY = READ_ONLY.
extern "C" Datum bloom_agg_finalfn(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (!state->auto_sized) {
        Size size = VARSIZE(state->filter);
        struct varlena *result = static_cast<struct varlena *>(palloc(size));
        memcpy(result, state->filter, size);
        PG_RETURN_POINTER(result);
    }
    state->count = sort_unique(state->hashes, state->count);
    if (state->count == 0) PG_RETURN_NULL();
    Parameters parameters;
    report_parameters(size_filter(state->count, state->error_rate, &parameters),
                      int64(state->count), state->error_rate);
    struct varlena *result = make_filter(parameters);
    FilterRef ref = FilterRef::of(bloom_bytes(result), parameters);
    for (size_t i = 0; i < state->count; i++) {
        if ((i & 0xffff) == 0xffff) CHECK_FOR_INTERRUPTS();
        ref.add(state->hashes[i]);
    }
    write_inserted(bloom_bytes(result), state->inserted);
    PG_RETURN_POINTER(result);
}

extern "C" Datum bloom_agg_combinefn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_combinefn");
    AggregateState *target = PG_ARGISNULL(0) ? nullptr
                                             : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    AggregateState *source = PG_ARGISNULL(1) ? nullptr
                                             : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(1));
    if (source == nullptr) PG_RETURN_POINTER(target);
    if (target == nullptr) {
        if (source->auto_sized) {
            target = new_auto_state(context, source->kind, source->error_rate);
        } else {
            PG_RETURN_POINTER(sized_state_from(context, source->kind, source->filter, source->header));
        }
    }
    if (target->auto_sized != source->auto_sized)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("cannot combine bloom aggregate states of different kinds")));
    if (target->auto_sized) {
        reserve_hashes(target, source->count);
        memcpy(target->hashes + target->count, source->hashes, source->count * sizeof(Hash128));
        target->count += source->count;
        target->inserted += source->inserted;
    } else {
        union_into(target->filter, target->header, source->filter, source->header);
    }
    PG_RETURN_POINTER(target);
}

// Serialized state, little-endian:
//   u8 kind (1 auto-sized, 2 sized), u8 key kind, then
//   auto-sized: f64 error_rate, u64 inserted, u64 count, count x (u64 low, u64 high);
//   sized: the filter's encoding.
constexpr uint8_t kSerialAuto = 1, kSerialSized = 2;
constexpr size_t kSerialAutoHeader = 2 + 8 + 8 + 8;

extern "C" Datum bloom_agg_serialfn(PG_FUNCTION_ARGS) {
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    Size size;
    bytea *result;
    if (state->auto_sized) {
        state->count = sort_unique(state->hashes, state->count);
        size = VARHDRSZ + kSerialAutoHeader + state->count * 16;
        result = static_cast<bytea *>(palloc_extended(size, MCXT_ALLOC_HUGE));
        uint8_t *out = reinterpret_cast<uint8_t *>(VARDATA(result));
        out[0] = kSerialAuto;
        out[1] = uint8_t(state->kind);
        uint64_t rate_bits;
        memcpy(&rate_bits, &state->error_rate, 8);
        store_u64(out + 2, rate_bits);
        store_u64(out + 10, state->inserted);
        store_u64(out + 18, state->count);
        out += kSerialAutoHeader;
        for (size_t i = 0; i < state->count; i++, out += 16) {
            store_u64(out, state->hashes[i].low);
            store_u64(out + 8, state->hashes[i].high);
        }
    } else {
        size_t length = bloom_length(state->filter);
        size = VARHDRSZ + 2 + length;
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

extern "C" Datum bloom_agg_deserialfn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_deserialfn");
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
        state->filter = static_cast<struct varlena *>(MemoryContextAllocHuge(context, VARHDRSZ + length - 2));
        SET_VARSIZE(state->filter, VARHDRSZ + length - 2);
        memcpy(bloom_bytes(state->filter), in + 2, length - 2);
        state->header = header;
        PG_RETURN_POINTER(state);
    }
    if (in[0] != kSerialAuto) report_bad_state("unknown state kind");
    if (length < kSerialAutoHeader) report_bad_state("too short");
    uint64_t rate_bits = load_u64(in + 2);
    double error_rate;
    memcpy(&error_rate, &rate_bits, 8);
    uint64_t count = load_u64(in + 18);
    if (count > (length - kSerialAutoHeader) / 16 || length != kSerialAutoHeader + count * 16)
        report_bad_state("length does not match the number of hashes");
    AggregateState *state = new_auto_state(context, KeyKind(kind), error_rate);
    state->inserted = load_u64(in + 10);
    reserve_hashes(state, count);
    const uint8_t *hashes = in + kSerialAutoHeader;
    for (uint64_t i = 0; i < count; i++, hashes += 16)
        state->hashes[i] = Hash128{load_u64(hashes), load_u64(hashes + 8)};
    state->count = count;
    PG_RETURN_POINTER(state);
}
