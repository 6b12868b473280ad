// The spill of an auto-sized aggregate state to temporary files (see agg_spill.hpp).
//
// The runs of all the states of one budget (agg_budget.hpp) are tapes of one tape set, made in a
// memory context of the budget's under the query's: one temporary file however many groups
// spill. A state's runs are closed when its memory context is reset (a sorted GROUP BY's next
// group, a hashed one's next batch), and the tape set, which deletes the file, when no live state
// has runs in it any more, or when the query ends. After an error the resource owner has closed
// and deleted the file already, before any memory is freed: the callbacks then leave it alone.
#include "agg_spill.hpp"

#include "agg_budget.hpp"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "common/file_utils.h"
#include "commands/tablespace.h"
#include "executor/nodeHash.h"
#include "storage/buffile.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "storage/ipc.h"
#include "storage/proc.h"
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

// In the state's memory context; its runs' tapes are in the budget's tape set.
struct AggregateSpill {
    SpillRun *runs;  // a stack: levels never increase from the bottom up
    uint32_t run_count;
    uint32_t run_capacity;
    uint32_t fan_in;  // runs merged at once: each reads through a tape block and a batch
};

size_t hash_memory_limit() { return get_hash_memory_limit(); }

namespace {

constexpr size_t kRunReadBytes = BLCKSZ + kSpillBatch * sizeof(uint64_t);

void close_tapes(void *arg) {
    AggregateBudget *budget = static_cast<AggregateBudget *>(arg);
    if (budget->tapes != nullptr && IsTransactionState()) LogicalTapeSetClose(budget->tapes);
    budget->tapes = nullptr;
    budget->spill_context = nullptr;
    budget->states_with_runs = 0;
}

// The budget's tape set, made when none is open.
LogicalTapeSet *budget_tapes(AggregateBudget *budget) {
    if (budget->tapes != nullptr) return budget->tapes;
    if (budget->spill_context == nullptr) {
        budget->spill_context = AllocSetContextCreate(GetMemoryChunkContext(budget),
                                                      "bloom_agg spill", ALLOCSET_DEFAULT_SIZES);
        budget->on_spill_context_reset.func = close_tapes;
        budget->on_spill_context_reset.arg = budget;
        MemoryContextRegisterResetCallback(budget->spill_context, &budget->on_spill_context_reset);
    }
    PrepareTempTablespaces();
    MemoryContext previous = MemoryContextSwitchTo(budget->spill_context);
    budget->tapes = LogicalTapeSetCreate(false, nullptr, -1);
    MemoryContextSwitchTo(previous);
    return budget->tapes;
}

AggregateSpill *start_spill(AggregateState *state) {
    AggregateBudget *budget = state->budget;
    Assert(budget != nullptr);
    budget_tapes(budget);
    AggregateSpill *spill = static_cast<AggregateSpill *>(
        MemoryContextAllocZero(state->context, sizeof(AggregateSpill)));
    // A quarter of the memory for the merge's reads, at least 4 runs and at most 16 at once: the
    // runs of every spilled group stay few (each takes a tape and a place in `runs`).
    spill->fan_in = uint32_t(Max(size_t(4), Min(size_t(16), budget->limit / 4 / kRunReadBytes)));
    spill->run_capacity = 4;
    spill->runs = static_cast<SpillRun *>(
        MemoryContextAlloc(state->context, spill->run_capacity * sizeof(SpillRun)));
    budget->states_with_runs++;
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
void merge_runs(AggregateBudget *budget, AggregateSpill *spill, uint32_t first, bool freeze) {
    const uint32_t n = spill->run_count - first;
    bool reads_frozen = false;
    for (uint32_t i = first; i < spill->run_count; i++) reads_frozen |= spill->runs[i].frozen;
    Assert(!reads_frozen || first == 0);
    // A new tape set only when no other state has runs in this one; otherwise the frozen run's
    // blocks stay in the file until the tape set is closed.
    const bool new_set = reads_frozen && budget->states_with_runs == 1;
    LogicalTapeSet *output_set = new_set ? LogicalTapeSetCreate(false, nullptr, -1) : budget->tapes;
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
    while (!heap.empty()) {
        const MergeHeap::Entry top = heap.top();
        if (count == 0 || top.hash != last) {
            last = top.hash;
            count++;
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
    if (new_set) {
        LogicalTapeSetClose(budget->tapes);
        budget->tapes = output_set;
    }
    spill->run_count = first;
    push_run(spill, SpillRun{out, count, freeze ? kFrozenLevel : level + 1, freeze});
}

// Merges the top fan_in runs while they are of one level: each level holds fewer than fan_in
// runs, so the stack stays short and every hash is merged about log(runs) / log(fan_in) times.
void merge_full_levels(AggregateBudget *budget, AggregateSpill *spill) {
    while (spill->run_count >= spill->fan_in &&
           spill->runs[spill->run_count - spill->fan_in].level ==
               spill->runs[spill->run_count - 1].level)
        merge_runs(budget, spill, spill->run_count - spill->fan_in, false);
}

}  // namespace

// The hashes held, as a sorted and deduplicated run: a flat state's array sorted in place, a
// bucketed state's bucket by bucket (a bucket is a range of the top byte, so the run is sorted as
// a whole).
void spill_held(AggregateState *state) {
    if (state->held == 0) return;
    AggregateSpill *spill = state->spill != nullptr ? state->spill : start_spill(state);
    AggregateBudget *budget = state->budget;
    MemoryContext previous = MemoryContextSwitchTo(budget->spill_context);
    LogicalTape *tape = LogicalTapeCreate(budget_tapes(budget));
    uint64_t count = 0;
    if (state->buckets == nullptr) {
        count = sort_unique(state->flat, state->held);
        LogicalTapeWrite(tape, state->flat, count * sizeof(uint64_t));
    } else {
        size_t largest = 0;
        for (uint32_t b = 0; b < kBuckets; b++) largest = Max(largest, state->buckets[b].count);
        uint64_t *sorted =
            static_cast<uint64_t *>(palloc_extended(largest * sizeof(uint64_t), MCXT_ALLOC_HUGE));
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
    }
    LogicalTapeRewindForRead(tape, BLCKSZ);
    push_run(spill, SpillRun{tape, count, 0, false});
    MemoryContextSwitchTo(previous);
    release_held(state);
    previous = MemoryContextSwitchTo(budget->spill_context);
    merge_full_levels(budget, spill);
    MemoryContextSwitchTo(previous);
}

uint64_t spill_finish(AggregateState *state) {
    spill_held(state);
    AggregateSpill *spill = state->spill;
    AggregateBudget *budget = state->budget;
    if (spill->run_count == 0 || budget == nullptr || budget->tapes == nullptr)
        elog(ERROR, "bloom_agg state has no spilled hashes to read");
    MemoryContext previous = MemoryContextSwitchTo(budget->spill_context);
    while (spill->run_count > spill->fan_in)
        merge_runs(budget, spill, spill->run_count - spill->fan_in, false);
    if (!(spill->run_count == 1 && spill->runs[0].frozen)) merge_runs(budget, spill, 0, true);
    MemoryContextSwitchTo(previous);
    return spill->runs[0].count;
}

size_t read_spilled(AggregateState *state, uint64_t *batch, size_t capacity, bool from_start) {
    AggregateSpill *spill = state->spill;
    Assert(spill->run_count == 1 && spill->runs[0].frozen);
    MemoryContext previous = MemoryContextSwitchTo(state->budget->spill_context);
    if (from_start) LogicalTapeRewindForRead(spill->runs[0].tape, BLCKSZ);
    CHECK_FOR_INTERRUPTS();
    size_t n =
        LogicalTapeRead(spill->runs[0].tape, batch, capacity * sizeof(uint64_t)) / sizeof(uint64_t);
    // At the end, the tape's read buffer (a block) is freed: a HashAggregate finalizes every group
    // of a batch before it resets their states, and each spilled group would hold one till then.
    if (n == 0) LogicalTapeRewindForRead(spill->runs[0].tape, BLCKSZ);
    MemoryContextSwitchTo(previous);
    return n;
}

void spill_forget(AggregateState *state) {
    AggregateSpill *spill = state->spill;
    AggregateBudget *budget = state->budget;
    if (spill == nullptr || budget == nullptr) return;
    state->spill = nullptr;
    if (budget->tapes == nullptr) return;
    for (uint32_t i = 0; i < spill->run_count; i++) LogicalTapeClose(spill->runs[i].tape);
    if (--budget->states_with_runs == 0) {
        if (IsTransactionState()) LogicalTapeSetClose(budget->tapes);
        budget->tapes = nullptr;
    }
}

// ---------------------------------------------------------------------------------------------
// Spilled partial states between processes.
//
// A FileSet's files outlive the process that writes them: the worker writes its hashes in a
// FileSet named after the leader's PID (pgsql_tmp<leader>.<number>.fileset, the number's top bit
// set, which PostgreSQL's own FileSets never set), and the leader deletes it once read. Files a
// leader never reads (its query stopped early, or failed) are deleted at the end of its
// transaction: it looks for its own such directories in the temporary tablespaces.

static_assert(sizeof(FileSet) <= kExportedBytes, "a FileSet fits in the serialized state");

namespace {

constexpr uint32_t kExportedNumberFlag = 0x80000000u;
const char *const kExportedName = "bloom_agg";

struct ExportedCleanup {
    bool registered;
    bool pending;
    int tablespace_count;
    Oid tablespaces[lengthof(FileSet{}.tablespaces)];
};
ExportedCleanup cleanup;

void delete_exported_directories() {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s%d.", PG_TEMP_FILE_PREFIX, MyProcPid);
    const size_t prefix_length = strlen(prefix);
    for (int t = 0; t < cleanup.tablespace_count; t++) {
        char directory[MAXPGPATH];
        TempTablespacePath(directory, cleanup.tablespaces[t]);
        DIR *dir = AllocateDir(directory);
        if (dir == nullptr) continue;
        struct dirent *entry;
        while ((entry = ReadDirExtended(dir, directory, LOG)) != nullptr) {
            if (strncmp(entry->d_name, prefix, prefix_length) != 0) continue;
            char *end;
            const unsigned long number = strtoul(entry->d_name + prefix_length, &end, 10);
            if (strcmp(end, ".fileset") != 0 || (number & kExportedNumberFlag) == 0) continue;
            char path[MAXPGPATH];
            snprintf(path, sizeof path, "%s/%s", directory, entry->d_name);
            PathNameDeleteTemporaryDir(path);
        }
        FreeDir(dir);
    }
}

void at_transaction_end(XactEvent event, void *) {
    if (!cleanup.pending) return;
    if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT && event != XACT_EVENT_PREPARE)
        return;
    cleanup.pending = false;
    delete_exported_directories();
}

void at_exit(int, Datum) {
    if (IsParallelWorker()) return;
    // Without a catalog to read temp_tablespaces from, the database's own tablespace at least
    // (where a worker's files go unless temp_tablespaces names others), and those remembered.
    bool have_database_tablespace = false;
    for (int t = 0; t < cleanup.tablespace_count; t++)
        have_database_tablespace |= cleanup.tablespaces[t] == MyDatabaseTableSpace;
    if (!have_database_tablespace && OidIsValid(MyDatabaseTableSpace) &&
        cleanup.tablespace_count < int(lengthof(cleanup.tablespaces)))
        cleanup.tablespaces[cleanup.tablespace_count++] = MyDatabaseTableSpace;
    delete_exported_directories();
}

pid_t reading_process() {
    if (IsParallelWorker() && MyProc->lockGroupLeader != nullptr)
        return MyProc->lockGroupLeader->pid;
    return MyProcPid;
}

}  // namespace

void delete_exported_files_at_exit() { before_shmem_exit(at_exit, 0); }

void expect_exported_files() {
    if (IsParallelWorker() || cleanup.pending) return;
    FileSet where;
    FileSetInit(&where);  // the temporary tablespaces, as a worker's FileSet gets them
    cleanup.tablespace_count = where.ntablespaces;
    memcpy(cleanup.tablespaces, where.tablespaces, sizeof cleanup.tablespaces);
    if (!cleanup.registered) {
        RegisterXactCallback(at_transaction_end, nullptr);
        cleanup.registered = true;
    }
    cleanup.pending = true;
}

uint64_t spill_export(AggregateState *state, uint8_t *exported) {
    static uint32_t exports = 0;
    const uint64_t count = spill_finish(state);
    expect_exported_files();  // when this process reads it back itself
    MemoryContext previous = MemoryContextSwitchTo(state->budget->spill_context);
    FileSet fileset;
    FileSetInit(&fileset);
    const uint32_t worker = IsParallelWorker() ? uint32_t(ParallelWorkerNumber) & 0x3ff : 0x3ff;
    fileset.creator_pid = reading_process();
    fileset.number = kExportedNumberFlag | (worker << 20) | (exports++ & 0xfffff);
    BufFile *file = BufFileCreateFileSet(&fileset, kExportedName);
    uint64_t batch[kSpillBatch];
    for (size_t n = read_spilled(state, batch, kSpillBatch, true); n > 0;
         n = read_spilled(state, batch, kSpillBatch, false))
        BufFileWrite(file, batch, n * sizeof(uint64_t));
    BufFileClose(file);
    MemoryContextSwitchTo(previous);
    memset(exported, 0, kExportedBytes);
    memcpy(exported, &fileset, sizeof fileset);
    return count;
}

bool exported_for_me(const uint8_t *exported) {
    FileSet fileset;
    memcpy(&fileset, exported, sizeof fileset);
    return fileset.creator_pid == MyProcPid && (fileset.number & kExportedNumberFlag) != 0 &&
           fileset.ntablespaces >= 1 && fileset.ntablespaces <= int(lengthof(fileset.tablespaces));
}

struct ExportedHashes {
    FileSet fileset;
    BufFile *file;
    int64 remaining;  // bytes not read yet: from 16 on, a read short of its size is an error
};

ExportedHashes *open_exported(const uint8_t *exported) {
    expect_exported_files();
    ExportedHashes *hashes = static_cast<ExportedHashes *>(palloc(sizeof(ExportedHashes)));
    memcpy(&hashes->fileset, exported, sizeof(FileSet));
    hashes->file = BufFileOpenFileSet(&hashes->fileset, kExportedName, O_RDONLY, false);
    hashes->remaining = BufFileSize(hashes->file);
    if (hashes->remaining % int64(sizeof(uint64_t)) != 0)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("bloom_agg partial state file has a partial hash")));
    return hashes;
}

size_t read_exported(ExportedHashes *hashes, uint64_t *batch, size_t capacity) {
    CHECK_FOR_INTERRUPTS();
    const size_t count = size_t(Min(int64(capacity), hashes->remaining / int64(sizeof(uint64_t))));
    if (count == 0) return 0;
#if PG_VERSION_NUM >= 160000
    BufFileReadExact(hashes->file, batch, count * sizeof(uint64_t));
#else
    if (BufFileRead(hashes->file, batch, count * sizeof(uint64_t)) != count * sizeof(uint64_t))
        ereport(ERROR, (errcode_for_file_access(),
                        errmsg("could not read bloom_agg partial state file: %m")));
#endif
    hashes->remaining -= int64(count * sizeof(uint64_t));
    return count;
}

void close_exported(ExportedHashes *hashes) {
    BufFileClose(hashes->file);
    FileSetDeleteAll(&hashes->fileset);
    pfree(hashes);
}

}  // namespace bloomfilter
