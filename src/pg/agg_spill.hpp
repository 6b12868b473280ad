// The spill of an auto-sized aggregate state (agg_state.hpp) to temporary files. The states of an
// aggregate hold their hashes in memory up to get_hash_memory_limit() (work_mem x
// hash_mem_multiplier) together (agg_budget.hpp), as hash aggregation does; past it, the largest
// states' hashes are written out as sorted, deduplicated runs on logical tapes (utils/logtape.h:
// one temporary file for the states of an aggregate, counted against temp_file_limit, deleted
// when no state has runs left in it, at the end of the query, on an error at the end of the
// transaction). Runs are merged as they pile up,
// a few at a time; the final function merges what remains into one run of the distinct hashes,
// sizes the filter for their exact number and adds them from the tape. The bytes are those an
// in-memory state gives: the same hashes, the same count.
#pragma once

#include "agg_state.hpp"

namespace bloomfilter {

// Hashes read from a tape per call.
constexpr size_t kSpillBatch = 512;

// The memory the hashes held in memory may take, in bytes.
size_t hash_memory_limit();
// Writes the hashes held as a run and frees them; starts the spill the first time.
void spill_held(AggregateState *state);
// Merges the held hashes and every run into one run of the distinct hashes, which stays
// readable (the state goes on: a window aggregate calls its final function row after row);
// returns their number.
uint64_t spill_finish(AggregateState *state);
// The state's memory is being reset: its runs are closed (and the tape set with the last).
void spill_forget(AggregateState *state);
// After spill_finish: the next up-to-`capacity` distinct hashes, in increasing order (from the
// first when from_start); 0 at the end.
size_t read_spilled(AggregateState *state, uint64_t *batch, size_t capacity, bool from_start);

// Parallel plans: a spilled partial state goes to the process that combines it (the leader) as a
// file of its distinct hashes in a FileSet named after that process, which reads it and deletes
// it; the serialized state carries the FileSet (kExportedBytes).
constexpr size_t kExportedBytes = 48;
// Writes the state's distinct hashes to such a file; returns their number.
uint64_t spill_export(AggregateState *state, uint8_t *exported);
// Whether `exported` names a file this process may read (exported for it); false for anything
// else, which the caller reports as a bad state.
bool exported_for_me(const uint8_t *exported);
struct ExportedHashes;
ExportedHashes *open_exported(const uint8_t *exported);
size_t read_exported(ExportedHashes *file, uint64_t *batch, size_t capacity);
// Closes the file and deletes it.
void close_exported(ExportedHashes *file);
// This process combines partial states (the leader of a parallel plan): at the end of its
// transaction, the files exported for it and never read (a LIMIT, an error) are deleted.
void expect_exported_files();
// At the exit of a process that is not a parallel worker, the files exported for it and left
// behind (a leader whose query failed before it read any partial state) are deleted.
void delete_exported_files_at_exit();

template <typename Use>
void for_each_exported_hash(const uint8_t *exported, Use &&use) {
    ExportedHashes *file = open_exported(exported);
    uint64_t batch[kSpillBatch];
    for (size_t n = read_exported(file, batch, kSpillBatch); n > 0;
         n = read_exported(file, batch, kSpillBatch))
        for (size_t i = 0; i < n; i++) use(batch[i]);
    close_exported(file);
}

// Calls use(h) for every distinct hash, after spill_finish.
template <typename Use>
void for_each_spilled_hash(AggregateState *state, Use &&use) {
    uint64_t batch[kSpillBatch];
    for (size_t n = read_spilled(state, batch, kSpillBatch, true); n > 0;
         n = read_spilled(state, batch, kSpillBatch, false))
        for (size_t i = 0; i < n; i++) use(batch[i]);
}

}  // namespace bloomfilter
