// The aggregates bloom_agg and bloom_union_agg: their transition, final and combine functions
// (the states and their hash container: agg_state.hpp; serialization: agg_serial.cpp).
//
// Two kinds of state, both in the aggregate memory context and updated in place (a state made
// by the deserialize function lives in the per-row memory PostgreSQL gives it, and the combine
// function copies what it needs from it):
// - sized (bloom_agg(value, capacity, error_rate) and bloom_union_agg): the filter itself, its
//   header (counter included) kept up to date in its bytes;
// - auto-sized (bloom_agg(value), bloom_agg(value, error_rate)): the distinct 64-bit hashes of
//   the keys (format version 2's), from which the final function sizes the filter for their
//   number; all of an aggregate's states in a plan node share one memory budget
//   (agg_budget.hpp).
#include "agg_budget.hpp"
#include "agg_spill.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_rate_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_sized_transfn);
PG_FUNCTION_INFO_V1(bloom_union_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_finalfn);
PG_FUNCTION_INFO_V1(bloom_agg_combinefn);
}

namespace {

constexpr double kDefaultErrorRate = 0.01;

AggregateState *auto_transition(FunctionCallInfo fcinfo, double error_rate) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_transfn");
    AggregateState *state =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    if (state == nullptr)
        state = new_auto_state(context, key_kind_of(get_fn_expr_argtype(fcinfo->flinfo, 1)),
                               error_rate, budget_of(fcinfo));
    if (!PG_ARGISNULL(1))
        collect(state, hash_key(PG_GETARG_DATUM(1), state->kind, kAutoVersion).low);
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
    refuse_layered(header, "bloom_union_agg");
    if (state == nullptr) {
        state = sized_state_from(context, KeyKind::bytes, filter, header);
    } else {
        union_into(state->filter, state->filter, state->header, filter, header);
    }
    PG_RETURN_POINTER(state);
}

// Only reads the state (counting the distinct hashes leaves them as they are; a spilled state's
// runs are merged into one, which holds the same hashes), hence FINALFUNC_MODIFY = READ_ONLY.
extern "C" Datum bloom_agg_finalfn(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    AggregateState *state = reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    // The state's filter itself, not a copy (which would double the memory): it lives until the
    // aggregate's result has been used, and window aggregates copy results before going on.
    if (!state->auto_sized) PG_RETURN_POINTER(state->filter);
    const bool spilled = state->spill != nullptr;
    uint64_t distinct = spilled ? spill_finish(state) : deduplicate_all(state, true);
    if (distinct == 0) PG_RETURN_NULL();
    Parameters parameters;
    report_parameters(size_filter(distinct, state->error_rate, &parameters), int64(distinct),
                      state->error_rate);
    parameters.version = kAutoVersion;
    struct varlena *result = make_filter(parameters);
    FilterRef ref = FilterRef::of(bloom_bytes(result), parameters);
    // Bucket by bucket (or in increasing order from the tape), the blocks written move forward
    // through the filter.
    if (spilled)
        for_each_spilled_hash(state, [&ref](uint64_t h) { ref.add(KeyHash{h, 0}); });
    else
        for_each_hash(state, [&ref](uint64_t h) { ref.add(KeyHash{h, 0}); });
    write_inserted(bloom_bytes(result), state->inserted);
    PG_RETURN_POINTER(result);
}

// Copies what it needs from the source state, whose hashes it never changes (a spilled source's
// runs are merged into one, holding the same hashes): the source may be a
// deserialized state in per-row memory, or another process's partial state read in place.
extern "C" Datum bloom_agg_combinefn(PG_FUNCTION_ARGS) {
    MemoryContext context = aggregate_context(fcinfo, "bloom_agg_combinefn");
    AggregateState *target =
        PG_ARGISNULL(0) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(0));
    AggregateState *source =
        PG_ARGISNULL(1) ? nullptr : reinterpret_cast<AggregateState *>(PG_GETARG_POINTER(1));
    if (source == nullptr) {
        if (target == nullptr) PG_RETURN_NULL();
        PG_RETURN_POINTER(target);
    }
    if (target == nullptr) {
        if (!source->auto_sized)
            PG_RETURN_POINTER(
                sized_state_from(context, source->kind, source->filter, source->header));
        target = new_auto_state(context, source->kind, source->error_rate, budget_of(fcinfo));
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
