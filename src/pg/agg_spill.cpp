// The spill of an auto-sized aggregate state to temporary files (see agg_spill.hpp).
//
// Everything of a spill (its tape set, the tapes' buffers, its runs) lives in a memory context
// of its own under the state's. A reset callback on it closes the tape set, which deletes the
// file, when the aggregate context is reset (a sorted GROUP BY's next group) or deleted (the end
// of the query). After an error the resource owner has closed and deleted the file already,
// before any memory is freed: the callback then leaves it alone.
#include "agg_spill.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/tablespace.h"
#include "executor/nodeHash.h"
#include "utils/logtape.h"
}

namespace bloomfilter {

struct SpillRun {
    LogicalTape *tape;
    uint64_t count;  // distinct hashes in it
    uint32_t level;  // 0: written from memory; n + 1: merged from runs of level n
    bool frozen;     // readable again (the final merge's); other runs are read once
};

// A frozen run is merged only by the next final merge, which takes every run: its level keeps it
// at the bottom of the stack, out of the merges of full levels.
constexpr uint32_t kFrozenLevel = PG_UINT32_MAX;

struct AggregateSpill {
    MemoryContext context;
    MemoryContextCallback on_reset;
    LogicalTapeSet *tapes;  // null once closed
    SpillRun *runs;         // a stack: levels never increase from the bottom up
    uint32_t run_count;
    uint32_t run_capacity;
    uint32_t fan_in;  // runs merged at once: each reads through a tape block and a batch
    uint32_t bucket_counts[kBuckets];  // of the last final merge's run
};

size_t hash_memory_limit() { return get_hash_memory_limit(); }

namespace {

constexpr size_t kRunReadBytes = BLCKSZ + kSpillBatch * sizeof(uint64_t);

void close_spill(void *arg) {
    AggregateSpill *spill = static_cast<AggregateSpill *>(arg);
    if (spill->tapes != nullptr && IsTransactionState()) LogicalTapeSetClose(spill->tapes);
    spill->tapes = nullptr;
}

AggregateSpill *start_spill(AggregateState *state) {
    MemoryContext context =
        AllocSetContextCreate(state->context, "bloom_agg spill", ALLOCSET_DEFAULT_SIZES);
    AggregateSpill *spill =
        static_cast<AggregateSpill *>(MemoryContextAllocZero(context, sizeof(AggregateSpill)));
    spill->context = context;
    // A quarter of the memory for the merge's reads, at least 4 runs and at most 256 at once.
    spill->fan_in =
        uint32_t(Max(size_t(4), Min(size_t(256), state->memory_limit / 4 / kRunReadBytes)));
    spill->run_capacity = 4 * spill->fan_in;
    spill->runs = static_cast<SpillRun *>(
        MemoryContextAlloc(context, spill->run_capacity * sizeof(SpillRun)));
    PrepareTempTablespaces();
    MemoryContext previous = MemoryContextSwitchTo(context);
    spill->tapes = LogicalTapeSetCreate(false, nullptr, -1);
    MemoryContextSwitchTo(previous);
    spill->on_reset.func = close_spill;
    spill->on_reset.arg = spill;
    MemoryContextRegisterResetCallback(context, &spill->on_reset);
    state->spill = spill;
    return spill;
}

void push_run(AggregateSpill *spill, const SpillRun &run) {
    if (spill->run_count == spill->run_capacity) {
        spill->run_capacity *= 2;
        spill->runs =
            static_cast<SpillRun *>(repalloc(spill->runs, spill->run_capacity * sizeof(SpillRun)));
    }
    spill->runs[spill->run_count++] = run;
}

struct RunReader {
    LogicalTape *tape;
    uint64_t *batch;
    uint32_t position;
    uint32_t count;
};

bool refill(RunReader &reader) {
    CHECK_FOR_INTERRUPTS();
    reader.count =
        uint32_t(LogicalTapeRead(reader.tape, reader.batch, kSpillBatch * sizeof(uint64_t)) /
                 sizeof(uint64_t));
    reader.position = 0;
    return reader.count > 0;
}

// Merges the runs from `first` to the top of the stack into one run of their distinct hashes,
// which replaces them (frozen: readable again, with its buckets' counts). In the spill's
// context. The blocks of a frozen run are never given back to the tape set: a merge that reads
// one (the next final merge, which reads every run) writes into a new tape set and closes the
// old one, so the file holds only live runs, whatever the number of final calls.
void merge_runs(AggregateSpill *spill, uint32_t first, bool freeze) {
    const uint32_t n = spill->run_count - first;
    bool reads_frozen = false;
    for (uint32_t i = first; i < spill->run_count; i++) reads_frozen |= spill->runs[i].frozen;
    Assert(!reads_frozen || first == 0);
    LogicalTapeSet *output_set =
        reads_frozen ? LogicalTapeSetCreate(false, nullptr, -1) : spill->tapes;
    RunReader *readers = static_cast<RunReader *>(palloc(n * sizeof(RunReader)));
    uint64_t *batches = static_cast<uint64_t *>(palloc((n + 1) * kSpillBatch * sizeof(uint64_t)));
    MergeHeap::Entry *entries =
        static_cast<MergeHeap::Entry *>(palloc(n * sizeof(MergeHeap::Entry)));
    MergeHeap heap(entries);
    uint32_t level = 0;
    for (uint32_t i = 0; i < n; i++) {
        const SpillRun &run = spill->runs[first + i];
        level = Max(level, run.level);
        if (run.frozen) LogicalTapeRewindForRead(run.tape, BLCKSZ);
        readers[i] = RunReader{run.tape, batches + size_t(i) * kSpillBatch, 0, 0};
        if (refill(readers[i])) heap.push(readers[i].batch[readers[i].position++], i);
    }
    LogicalTape *out = LogicalTapeCreate(output_set);
    uint64_t *pending = batches + size_t(n) * kSpillBatch;
    size_t pending_count = 0;
    uint64_t count = 0, last = 0;
    if (freeze) memset(spill->bucket_counts, 0, sizeof(spill->bucket_counts));
    while (!heap.empty()) {
        const MergeHeap::Entry top = heap.top();
        if (count == 0 || top.hash != last) {
            last = top.hash;
            count++;
            if (freeze) spill->bucket_counts[last >> (64 - kBucketBits)]++;
            pending[pending_count++] = last;
            if (pending_count == kSpillBatch) {
                LogicalTapeWrite(out, pending, pending_count * sizeof(uint64_t));
                pending_count = 0;
            }
        }
        RunReader &reader = readers[top.run];
        if (reader.position == reader.count && !refill(reader))
            heap.pop();
        else
            heap.replace_top(reader.batch[reader.position++]);
    }
    if (pending_count > 0) LogicalTapeWrite(out, pending, pending_count * sizeof(uint64_t));
    for (uint32_t i = 0; i < n; i++) LogicalTapeClose(readers[i].tape);
    pfree(entries);
    pfree(batches);
    pfree(readers);
    Assert(count > 0);
    if (freeze)
        LogicalTapeFreeze(out, nullptr);
    else
        LogicalTapeRewindForRead(out, BLCKSZ);
    if (reads_frozen) {
        LogicalTapeSetClose(spill->tapes);
        spill->tapes = output_set;
    }
    spill->run_count = first;
    push_run(spill, SpillRun{out, count, freeze ? kFrozenLevel : level + 1, freeze});
}

// Merges the top fan_in runs while they are of one level: each level holds fewer than fan_in
// runs, so the stack stays short and every hash is merged about log(runs) / log(fan_in) times.
void merge_full_levels(AggregateSpill *spill) {
    while (spill->run_count >= spill->fan_in &&
           spill->runs[spill->run_count - spill->fan_in].level ==
               spill->runs[spill->run_count - 1].level)
        merge_runs(spill, spill->run_count - spill->fan_in, false);
}

}  // namespace

// The buckets' hashes, sorted and deduplicated bucket by bucket (a bucket is a range of the
// top byte, so the run is sorted as a whole).
void spill_held(AggregateState *state) {
    if (state->held == 0) return;
    AggregateSpill *spill = state->spill != nullptr ? state->spill : start_spill(state);
    MemoryContext previous = MemoryContextSwitchTo(spill->context);
    size_t largest = 0;
    for (uint32_t b = 0; b < kBuckets; b++) largest = Max(largest, state->buckets[b].count);
    uint64_t *sorted =
        static_cast<uint64_t *>(palloc_extended(largest * sizeof(uint64_t), MCXT_ALLOC_HUGE));
    LogicalTape *tape = LogicalTapeCreate(spill->tapes);
    uint64_t count = 0;
    for (uint32_t b = 0; b < kBuckets; b++) {
        const HashBucket &bucket = state->buckets[b];
        if (bucket.count == 0) continue;
        size_t n = 0;
        for (const HashChunk *chunk = bucket.first; chunk != nullptr; chunk = chunk->next)
            for (uint32_t i = 0, end = bucket.count_of(chunk); i < end; i++)
                sorted[n++] = chunk->get(i, b);
        n = sort_unique(sorted, n);
        LogicalTapeWrite(tape, sorted, n * sizeof(uint64_t));
        count += n;
    }
    pfree(sorted);
    LogicalTapeRewindForRead(tape, BLCKSZ);
    push_run(spill, SpillRun{tape, count, 0, false});
    MemoryContextSwitchTo(previous);
    release_held(state);
    previous = MemoryContextSwitchTo(spill->context);
    merge_full_levels(spill);
    MemoryContextSwitchTo(previous);
}

uint64_t spill_finish(AggregateState *state, uint32_t *bucket_counts) {
    spill_held(state);
    AggregateSpill *spill = state->spill;
    MemoryContext previous = MemoryContextSwitchTo(spill->context);
    while (spill->run_count > spill->fan_in)
        merge_runs(spill, spill->run_count - spill->fan_in, false);
    if (!(spill->run_count == 1 && spill->runs[0].frozen)) merge_runs(spill, 0, true);
    MemoryContextSwitchTo(previous);
    if (bucket_counts != nullptr)
        memcpy(bucket_counts, spill->bucket_counts, sizeof(spill->bucket_counts));
    return spill->runs[0].count;
}

size_t read_spilled(AggregateState *state, uint64_t *batch, size_t capacity, bool from_start) {
    AggregateSpill *spill = state->spill;
    Assert(spill->run_count == 1 && spill->runs[0].frozen);
    MemoryContext previous = MemoryContextSwitchTo(spill->context);
    if (from_start) LogicalTapeRewindForRead(spill->runs[0].tape, BLCKSZ);
    CHECK_FOR_INTERRUPTS();
    size_t n =
        LogicalTapeRead(spill->runs[0].tape, batch, capacity * sizeof(uint64_t)) / sizeof(uint64_t);
    MemoryContextSwitchTo(previous);
    return n;
}

}  // namespace bloomfilter
