// One memory budget for all the states of one auto-sized bloom_agg in one plan node: every
// group's state under GROUP BY, hashed or sorted, in every grouping set. PostgreSQL's
// HashAggregate sees a state's size only when it creates its group, and cannot spill what grows
// afterwards; the states bound themselves together instead. Together they hold at most
// get_hash_memory_limit() (work_mem x hash_mem_multiplier) of hashes in memory. Under a
// HashAggregate they take what its limit leaves beside the groups' keys, the states' structs and
// its table, between three eighths and three quarters of hash_mem (the rest is for its spill
// buffers): the node counts all of it against one limit, and creates groups only while the total
// is under it. A state that needs
// more makes room by spilling the largest states' hashes to temporary files (agg_spill.hpp),
// its own included, until they take three quarters of that. The budget lives with
// the aggregate's function (fn_extra of its transition or combine function, in the query's
// memory); a state joins it when made and leaves it when its memory context is reset.
//
// The states' hashes are in a memory context of the budget's under the aggregate's (so that
// HashAggregate counts them, and a reset frees them): an AllocSet of 1 kB blocks, which gives
// every allocation past 128 bytes (an array of more than 16 hashes, a chunk, a sketch) back to
// the system when freed. A spilled state's memory is then free for good, not kept in the
// aggregate's context for allocations of its size class only.
#pragma once

#include "agg_state.hpp"

namespace bloomfilter {

struct HashContext;

struct AggregateBudget {
    size_t limit;             // outside a HashAggregate
    struct AggState *hashed;  // the HashAggregate whose groups the states are, if any
    size_t used;              // the held_bytes() of every live state
    uint64_t live;            // how many states are on the list
    AggregateState *states;   // the live states, linked through budget_prev and budget_next
    // The spill's tape set, which every state's runs share (agg_spill.cpp): made at the first
    // spill in spill_context, closed when no live state has runs in it or the query ends.
    MemoryContext spill_context;
    MemoryContextCallback on_spill_context_reset;
    struct LogicalTapeSet *tapes;
    uint64_t states_with_runs;
    HashContext *hash_contexts;  // one under each aggregate context with live states
};

// The budget of the aggregate fcinfo's function serves (made at its first call).
AggregateBudget *budget_of(FunctionCallInfo fcinfo);
// Puts a new state on the budget's list; it leaves it when its memory context is reset.
void budget_join(AggregateBudget *budget, AggregateState *state);
// Before the state's memory grows by `bytes`: past the limit, spills the largest states (the
// state itself perhaps: the caller looks at it again). True when the bytes then fit.
bool budget_make_room(AggregateState *state, size_t bytes);
// After the state's memory changed: counts held_bytes() anew.
void budget_update(AggregateState *state);

}  // namespace bloomfilter
