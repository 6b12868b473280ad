// The memory budget of an aggregate's states in one plan node (see agg_budget.hpp).
#include "agg_budget.hpp"

#include "agg_spill.hpp"

extern "C" {
#include "nodes/execnodes.h"
}

namespace bloomfilter {

struct HashContext {
    MemoryContext parent;
    MemoryContext context;
    AggregateBudget *budget;
    HashContext *next;
    MemoryContextCallback on_delete;
};

namespace {

// Deleted with its parent (reset or deleted): off the budget's list.
void forget_hash_context(void *arg) {
    HashContext *gone = static_cast<HashContext *>(arg);
    for (HashContext **link = &gone->budget->hash_contexts; *link != nullptr;
         link = &(*link)->next) {
        if (*link == gone) {
            *link = gone->next;
            break;
        }
    }
}

MemoryContext hash_context_under(AggregateBudget *budget, MemoryContext parent) {
    for (HashContext *h = budget->hash_contexts; h != nullptr; h = h->next)
        if (h->parent == parent) return h->context;
    MemoryContext context = AllocSetContextCreate(parent, "bloom_agg hashes", 0, 1024, 1024);
    HashContext *h = static_cast<HashContext *>(MemoryContextAlloc(context, sizeof(HashContext)));
    h->parent = parent;
    h->context = context;
    h->budget = budget;
    h->next = budget->hash_contexts;
    h->on_delete.func = forget_hash_context;
    h->on_delete.arg = h;
    MemoryContextRegisterResetCallback(context, &h->on_delete);
    budget->hash_contexts = h;
    return context;
}

// When its memory context is reset (the next group of a sorted GROUP BY, the next batch of a
// hashed one, the end of the query), a state leaves the budget and its runs' tapes are closed.
void leave_budget(void *arg) {
    AggregateState *state = static_cast<AggregateState *>(arg);
    AggregateBudget *budget = state->budget;
    spill_forget(state);
    if (state->budget_prev != nullptr)
        state->budget_prev->budget_next = state->budget_next;
    else
        budget->states = state->budget_next;
    if (state->budget_next != nullptr) state->budget_next->budget_prev = state->budget_prev;
    budget->used -= state->budget_bytes;
    budget->live--;
    state->budget = nullptr;
}

// What a HashAggregate's limit leaves the states' hashes: three quarters of hash_mem (the rest
// is for the spill partitions' buffers, which the node may add when a batch it thought would
// fit does not) or the node's own lower limit, minus all else it counts (the groups' keys, the
// states' structs, its table, and the blocks holding the hashes beyond used's count). At least
// half of that: a node whose groups already fill its limit creates no more, and the states that
// grow then are many and small, each spill of them a run.
size_t room_beside_groups(const AggregateBudget *budget) {
    AggState *node = budget->hashed;
    const size_t limit =
        Min(hash_memory_limit() / 4 * 3, Max(node->hash_mem_limit, size_t(1) << 10));
    size_t hashes = 0;
    for (const HashContext *h = budget->hash_contexts; h != nullptr; h = h->next)
        hashes += MemoryContextMemAllocated(h->context, true);
    const size_t total = hash_aggregate_memory(node);
    const size_t rest = total - Min(total, hashes) + (hashes - Min(hashes, budget->used));
    const size_t room = limit > rest ? limit - rest : 0;
    return Max(limit / 2, room);
}

int larger_first(const void *a, const void *b) {
    const size_t x = (*static_cast<AggregateState *const *>(a))->budget_bytes;
    const size_t y = (*static_cast<AggregateState *const *>(b))->budget_bytes;
    return x > y ? -1 : x < y ? 1 : 0;
}

}  // namespace

AggregateBudget *budget_of(FunctionCallInfo fcinfo) {
    FmgrInfo *flinfo = fcinfo->flinfo;
    if (flinfo->fn_extra == nullptr) {
        AggregateBudget *budget = static_cast<AggregateBudget *>(
            MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(AggregateBudget)));
        // A plain or sorted aggregate has one state at a time, with the whole limit.
        budget->limit = hash_memory_limit();
        if (fcinfo->context != nullptr && IsA(fcinfo->context, AggState) &&
            (castNode(AggState, fcinfo->context)->aggstrategy == AGG_HASHED ||
             castNode(AggState, fcinfo->context)->aggstrategy == AGG_MIXED))
            budget->hashed = castNode(AggState, fcinfo->context);
        flinfo->fn_extra = budget;
    }
    return static_cast<AggregateBudget *>(flinfo->fn_extra);
}

void budget_join(AggregateBudget *budget, AggregateState *state) {
    state->budget = budget;
    state->hashes = hash_context_under(budget, state->context);
    state->budget_prev = nullptr;
    state->budget_next = budget->states;
    if (budget->states != nullptr) budget->states->budget_prev = state;
    budget->states = state;
    budget->live++;
    state->budget_bytes = 0;
    state->on_reset.func = leave_budget;
    state->on_reset.arg = state;
    MemoryContextRegisterResetCallback(state->context, &state->on_reset);
    budget_update(state);
}

void budget_update(AggregateState *state) {
    AggregateBudget *budget = state->budget;
    if (budget == nullptr) return;
    const size_t bytes = held_bytes(state);
    budget->used = budget->used - state->budget_bytes + bytes;
    state->budget_bytes = bytes;
}

bool budget_make_room(AggregateState *state, size_t bytes) {
    AggregateBudget *budget = state->budget;
    if (budget == nullptr) return true;
    const size_t limit = budget->hashed != nullptr ? room_beside_groups(budget) : budget->limit;
    if (budget->used + bytes <= limit) return true;
    // Down to three quarters of the limit, so that the next spill is some way off: the largest
    // states first, which free the most for one run each.
    const size_t target = limit / 4 * 3;
    AggregateState **order = static_cast<AggregateState **>(
        palloc_extended(budget->live * sizeof(AggregateState *), MCXT_ALLOC_HUGE));
    size_t count = 0;
    for (AggregateState *s = budget->states; s != nullptr; s = s->budget_next)
        if (s->held > 0) order[count++] = s;
    qsort(order, count, sizeof(AggregateState *), larger_first);
    for (size_t i = 0; i < count && budget->used + bytes > target; i++) {
        if ((i & 255) == 255) CHECK_FOR_INTERRUPTS();
        spill_held(order[i]);
    }
    pfree(order);
    return budget->used + bytes <= limit;
}

}  // namespace bloomfilter
