// The bloomfilter index access method: a maintained Bloom filter that PostgreSQL itself keeps
// current on every insert, in every code path (COPY, partitions, ATTACH PARTITION, rules,
// triggers), dropped with its table and logged in WAL (generic records) so that crash recovery
// and standbys have it. It answers no scan: it is read by bloom_index_contains and the other
// functions in index_contains.cpp and index_read.cpp. Layout in index_pages.hpp.
#include "index_pages.hpp"

extern "C" {
#include "access/amapi.h"
#include "access/rmgr.h"
#include "access/xloginsert.h"
#include "access/reloptions.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "commands/vacuum.h"
#include "storage/buf_internals.h"
#include "storage/lmgr.h"
#include "utils/catcache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_handler);
}

namespace {

constexpr int64 kDefaultCapacity = 1000000;
constexpr double kDefaultErrorRate = 0.01;

// WITH (capacity = ..., error_rate = ...), as build_reloptions() fills it.
struct IndexOptions {
    int32 vl_len_;
    int capacity;
    double error_rate;
};

relopt_kind index_relopt_kind;

const relopt_parse_elt kOptionTable[] = {
    {"capacity", RELOPT_TYPE_INT, offsetof(IndexOptions, capacity)},
    {"error_rate", RELOPT_TYPE_REAL, offsetof(IndexOptions, error_rate)},
};

// The filter's parameters from the index's options (the defaults without them).
Parameters index_parameters(Relation index) {
    const IndexOptions *options = reinterpret_cast<const IndexOptions *>(index->rd_options);
    const int64 capacity = options ? options->capacity : kDefaultCapacity;
    const double error_rate = options ? options->error_rate : kDefaultErrorRate;
    Parameters parameters;
    report_parameters(size_filter(uint64_t(capacity), error_rate, &parameters), capacity,
                      error_rate);
    parameters.version = kFormatVersion2;
    return parameters;
}

bytea *bloom_am_options(Datum reloptions, bool validate) {
    IndexOptions *options = static_cast<IndexOptions *>(
        build_reloptions(reloptions, validate, index_relopt_kind, sizeof(IndexOptions),
                         kOptionTable, lengthof(kOptionTable)));
    if (options != nullptr && validate) {
        // The reloption's own range check includes 0 and 1.
        if (!(options->error_rate > 0.0 && options->error_rate < 1.0))
            report_parameters(Status::error_rate_out_of_range, options->capacity,
                              options->error_rate);
        Parameters parameters;
        report_parameters(size_filter(uint64_t(options->capacity), options->error_rate, &parameters),
                          options->capacity, options->error_rate);
    }
    return reinterpret_cast<bytea *>(options);
}

IndexPageOpaque *page_opaque(Page page) {
    return reinterpret_cast<IndexPageOpaque *>(PageGetSpecialPointer(page));
}

void init_page(Page page, uint16_t flags) {
    PageInit(page, BLCKSZ, sizeof(IndexPageOpaque));
    IndexPageOpaque *opaque = page_opaque(page);
    opaque->flags = flags;
    opaque->page_id = kIndexPageId;
}

// A new page at the end of the index, exclusively locked.
Buffer new_page(Relation index) {
#if PG_VERSION_NUM >= 160000
    return ExtendBufferedRel(BMR_REL(index), MAIN_FORKNUM, nullptr, EB_LOCK_FIRST);
#else
    const bool need_lock = !RELATION_IS_LOCAL(index);
    if (need_lock) LockRelationForExtension(index, ExclusiveLock);
    Buffer buffer = ReadBuffer(index, P_NEW);
    LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
    if (need_lock) UnlockRelationForExtension(index, ExclusiveLock);
    return buffer;
#endif
}

// Writes the metapage and the data pages of a filter held in memory (the byte format, its
// header first), each page logged whole.
void write_pages(Relation index, const uint8_t *filter, const Parameters &parameters,
                 uint64_t inserted) {
    const uint32_t bytes_per_page = bytes_per_page_for(parameters);
    const uint64_t bits_bytes = parameters.encoded_bytes() - kHeaderBytes;
    const uint32_t data_pages = uint32_t((bits_bytes + bytes_per_page - 1) / bytes_per_page);

    Buffer buffer = new_page(index);
    if (BufferGetBlockNumber(buffer) != kMetaBlock)
        elog(ERROR, "bloomfilter index \"%s\" is not empty", RelationGetRelationName(index));
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, GENERIC_XLOG_FULL_IMAGE);
    init_page(page, kMetaPageFlag);
    IndexMeta meta{};
    meta.magic = kIndexMagic;
    meta.layout_version = kIndexLayoutVersion;
    meta.bytes_per_page = bytes_per_page;
    meta.data_pages = data_pages;
    memcpy(meta.header, filter, kHeaderBytes);
    write_inserted(meta.header, inserted);
    memcpy(PageGetContents(page), &meta, sizeof meta);
    reinterpret_cast<PageHeader>(page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof meta;
    GenericXLogFinish(xlog);
    UnlockReleaseBuffer(buffer);

    const uint8_t *bits = filter + kHeaderBytes;
    for (uint32_t n = 0; n < data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * bytes_per_page;
        const uint32_t length = uint32_t(Min(uint64_t(bytes_per_page), bits_bytes - begin));
        buffer = new_page(index);
        xlog = GenericXLogStart(index);
        page = GenericXLogRegisterBuffer(xlog, buffer, GENERIC_XLOG_FULL_IMAGE);
        init_page(page, 0);
        memcpy(page_bits(page), bits + begin, length);
        reinterpret_cast<PageHeader>(page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + length;
        GenericXLogFinish(xlog);
        UnlockReleaseBuffer(buffer);
    }
}

struct BuildState {
    Relation index;
    FilterRef filter;
    uint64_t inserted;
    double tuples;
};

void build_callback(Relation index, ItemPointer, Datum *values, bool *isnull, bool, void *arg) {
    BuildState *state = static_cast<BuildState *>(arg);
    state->tuples += 1;
    if (isnull[0]) return;
    state->filter.add(index_key_hash(index, values[0]));
    state->inserted++;
}

IndexBuildResult *bloom_am_build(Relation heap, Relation index, IndexInfo *index_info) {
    if (RelationGetNumberOfBlocks(index) != 0)
        elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
    const Parameters parameters = index_parameters(index);
    // The whole filter in memory first: the build sets bits all over it, and each page is
    // then written once.
    struct varlena *filter = make_filter(parameters);
    BuildState state{index, FilterRef::of(bloom_bytes(filter), parameters), 0, 0};
    table_index_build_scan(heap, index, index_info, true, true, build_callback, &state, nullptr);
    write_pages(index, bloom_bytes(filter), parameters, state.inserted);
    pfree(filter);
    IndexBuildResult *result = static_cast<IndexBuildResult *>(palloc0(sizeof(IndexBuildResult)));
    result->heap_tuples = state.tuples;
    result->index_tuples = double(state.inserted);
    return result;
}

void bloom_am_build_empty(Relation index) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("bloomfilter indexes on unlogged tables are not supported")));
}

// A key's bit in the index: its page, the byte in the page's bits and the bit's mask.
struct BitPlace {
    BlockNumber page;
    uint32_t byte;
    uint8_t mask;
};

int compare_places(const void *a, const void *b) {
    const BlockNumber pa = static_cast<const BitPlace *>(a)->page;
    const BlockNumber pb = static_cast<const BitPlace *>(b)->page;
    return pa < pb ? -1 : pa > pb;
}

// The key's bits by page (one page, unless the filter's blocks span pages). Returns how many (k).
uint32_t key_places(const IndexLayout &layout, KeyHash h, BitPlace *places) {
    const uint64_t start = layout.block_start(h);
    uint32_t n = 0;
    for_each_position(h, kFormatVersion2, layout.parameters.hashes, layout.parameters.block_log2,
                      [&](uint32_t bit) {
                          const uint64_t byte = start + bit / 8;
                          places[n++] = BitPlace{layout.page_of(byte), layout.offset_in_page(byte),
                                                 uint8_t(1u << (bit & 7))};
                      });
    qsort(places, n, sizeof(BitPlace), compare_places);
    return n;
}

// A page of this index of the kind wanted. The special space's size is checked before it is
// read: a page whose pd_special points elsewhere would make its opaque data lie past the page.
bool is_index_page(Page page, bool meta) {
    return !PageIsNew(page) && PageGetSpecialSize(page) == MAXALIGN(sizeof(IndexPageOpaque)) &&
           page_opaque(page)->page_id == kIndexPageId &&
           ((page_opaque(page)->flags & kMetaPageFlag) != 0) == meta;
}

Page checked_page(Relation index, Buffer buffer) {
    Page page = BufferGetPage(buffer);
    if (!is_index_page(page, false))
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("bloomfilter index \"%s\" has a corrupted page %u",
                               RelationGetRelationName(index), BufferGetBlockNumber(buffer))));
    return page;
}

bool places_set(Page page, const BitPlace *places, uint32_t n) {
    const uint8_t *bits = page_bits(page);
    for (uint32_t i = 0; i < n; i++)
        if ((bits[places[i].byte] & places[i].mask) == 0) return false;
    return true;
}

#ifdef USE_ASSERT_CHECKING
// How many bytes of bits a page's layout leaves room for, from its own header.
uint32_t bytes_per_page_room(Page page) {
    return uint32_t(PageGetSpecialPointer(page) - reinterpret_cast<char *>(page_bits(page)));
}
#endif

// Sets bits of a data page whose buffer is exclusively locked, logged through the generic WAL
// API as contrib/bloom logs its pages: GenericXLogFinish finds the changed bytes itself, and its
// record format stays generic_xlog.c's own.
void set_bits_logged(Relation index, Buffer buffer, const BitPlace *places, uint32_t n) {
    Assert(LWLockHeldByMeInMode(BufferDescriptorGetContentLock(GetBufferDescriptor(buffer - 1)),
                                LW_EXCLUSIVE));
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, 0);
    uint8_t *bits = page_bits(page);
    for (uint32_t i = 0; i < n; i++) {
        Assert(places[i].byte < bytes_per_page_room(page));
        bits[places[i].byte] |= places[i].mask;
    }
    GenericXLogFinish(xlog);
}

// Sets the key's bits. A page whose bits are all set already is only read: a key added again
// (and every row of a REINDEX CONCURRENTLY's validation pass) writes no WAL.
void add_key(Relation index, KeyHash h) {
    const IndexLayout &layout = index_layout(index);
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * layout.parameters.hashes));
    const uint32_t n = key_places(layout, h, places);
    for (uint32_t first = 0; first < n;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        Buffer buffer = ReadBuffer(index, places[first].page);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        if (!places_set(checked_page(index, buffer), places + first, end - first)) {
            LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
            LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
            set_bits_logged(index, buffer, places + first, end - first);
        }
        UnlockReleaseBuffer(buffer);
        first = end;
    }
    pfree(places);
}

// The key's bits are set before the row can commit: no committed row is ever missing. The
// executor's index_unchanged is only a hint, from the columns an UPDATE names: a BEFORE trigger
// may have changed the key, so it is not trusted (an unchanged key's page is only read).
bool bloom_am_insert(Relation index, Datum *values, bool *isnull, ItemPointer, Relation,
                  IndexUniqueCheck, bool, IndexInfo *) {
    Assert(CheckRelationLockedByMe(index, RowExclusiveLock, true));
    if (isnull[0]) return false;
    add_key(index, index_key_hash(index, values[0]));
    return false;
}

// A Bloom filter cannot forget a key: VACUUM removes nothing from it. bloom_index_info tells
// when deletes have left it fuller than the table needs (then REINDEX).
IndexBulkDeleteResult *bloom_am_bulk_delete(IndexVacuumInfo *, IndexBulkDeleteResult *stats,
                                         IndexBulkDeleteCallback, void *) {
    if (stats == nullptr)
        stats = static_cast<IndexBulkDeleteResult *>(palloc0(sizeof(IndexBulkDeleteResult)));
    return stats;
}

IndexBulkDeleteResult *bloom_am_vacuum_cleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats) {
    if (info->analyze_only) return stats;
    if (stats == nullptr)
        stats = static_cast<IndexBulkDeleteResult *>(palloc0(sizeof(IndexBulkDeleteResult)));
    stats->num_pages = RelationGetNumberOfBlocks(info->index);
    stats->num_index_tuples = info->num_heap_tuples;
    stats->estimated_count = info->estimated_count;
    return stats;
}

// No scan can use the index (it has neither amgettuple nor amgetbitmap), so the planner never
// asks; if it did, the answer is "never".
void bloom_am_cost_estimate(struct PlannerInfo *, struct IndexPath *, double, Cost *startup_cost,
                         Cost *total_cost, Selectivity *selectivity, double *correlation,
                         double *pages) {
    *startup_cost = 1.0e10;
    *total_cost = 1.0e10;
    *selectivity = 1.0;
    *correlation = 0.0;
    *pages = 0.0;
}

// An operator class has one support function, number 1: the key's 64-bit hash as bigint, from
// one argument of the class's type (or one it is binary-coercible to).
bool bloom_am_validate(Oid opclass_oid) {
    HeapTuple class_tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass_oid));
    if (!HeapTupleIsValid(class_tuple)) elog(ERROR, "cache lookup failed for operator class %u", opclass_oid);
    const Form_pg_opclass opclass = reinterpret_cast<Form_pg_opclass>(GETSTRUCT(class_tuple));
    const Oid family = opclass->opcfamily, input_type = opclass->opcintype;
    const char *name = pstrdup(NameStr(opclass->opcname));
    ReleaseSysCache(class_tuple);
    bool valid = true, has_hash = false;
    CatCList *procs = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(family));
    for (int i = 0; i < procs->n_members; i++) {
        const Form_pg_amproc proc = reinterpret_cast<Form_pg_amproc>(GETSTRUCT(&procs->members[i]->tuple));
        if (proc->amproclefttype != input_type) continue;
        if (proc->amprocnum != 1 || get_func_rettype(proc->amproc) != INT8OID ||
            get_func_nargs(proc->amproc) != 1) {
            ereport(INFO, (errmsg("bloomfilter operator class \"%s\" has an invalid support function %d", name,
                                  proc->amprocnum)));
            valid = false;
        } else {
            has_hash = true;
        }
    }
    ReleaseSysCacheList(procs);
    if (!has_hash) {
        ereport(INFO, (errmsg("bloomfilter operator class \"%s\" has no support function 1", name)));
        valid = false;
    }
    return valid;
}

IndexScanDesc bloom_am_begin_scan(Relation index, int, int) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("bloomfilter index \"%s\" cannot be scanned", RelationGetRelationName(index)),
                    errhint("Check values with bloom_index_contains().")));
    return nullptr;
}
void bloom_am_rescan(IndexScanDesc, ScanKey, int, ScanKey, int) {}
void bloom_am_end_scan(IndexScanDesc) {}

}  // namespace

namespace bloomfilter {

bool is_bloomfilter_index(Relation index) {
    return (index->rd_rel->relkind == RELKIND_INDEX ||
            index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX) &&
           index->rd_indam != nullptr && index->rd_indam->aminsert == bloom_am_insert;
}

const IndexLayout &index_layout(Relation index) {
    if (index->rd_amcache != nullptr) return *static_cast<const IndexLayout *>(index->rd_amcache);
    IndexMeta meta;
    bool valid = false;
    if (RelationGetNumberOfBlocks(index) > kMetaBlock) {
        Buffer buffer = ReadBuffer(index, kMetaBlock);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = BufferGetPage(buffer);
        valid = is_index_page(page, true);
        if (valid) memcpy(&meta, PageGetContents(page), sizeof meta);
        UnlockReleaseBuffer(buffer);
    }
    IndexLayout layout{};
    if (valid) {
        valid = meta.magic == kIndexMagic && meta.layout_version == kIndexLayoutVersion &&
                meta.header[kOffsetBlockLog2] >= kMinBlockLog2 &&
                meta.header[kOffsetBlockLog2] <= kMaxBlockLog2;
    }
    if (valid) {
        const uint64_t total = kHeaderBytes + (uint64_t(load_u32(meta.header + kOffsetBlocks))
                                               << (meta.header[kOffsetBlockLog2] - 3));
        Header header;
        valid = read_header(meta.header, kHeaderBytes, total, &header) == Status::ok &&
                header.parameters.version == kFormatVersion2;
        layout.parameters = header.parameters;
        layout.inserted_by_build = header.inserted;
        layout.bytes_per_page = meta.bytes_per_page;
        layout.data_pages = meta.data_pages;
        valid = valid && meta.bytes_per_page == bytes_per_page_for(layout.parameters) &&
                uint64_t(meta.data_pages) ==
                    (layout.bits_bytes() + meta.bytes_per_page - 1) / meta.bytes_per_page &&
                RelationGetNumberOfBlocks(index) >= 1 + meta.data_pages;
    }
    if (!valid)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("\"%s\" is not a valid bloomfilter index: its metapage is corrupted",
                               RelationGetRelationName(index)),
                        errhint("REINDEX it.")));
    // One allocation with its buffers' array: the relcache frees rd_amcache alone when it reloads
    // the index's entry.
    char *cached = static_cast<char *>(MemoryContextAllocZero(
        index->rd_indexcxt, MAXALIGN(sizeof(IndexLayout)) + sizeof(Buffer) * layout.data_pages));
    layout.recent_buffers = reinterpret_cast<Buffer *>(cached + MAXALIGN(sizeof(IndexLayout)));
    memcpy(cached, &layout, sizeof layout);
    index->rd_amcache = cached;
    return *reinterpret_cast<const IndexLayout *>(cached);
}

KeyHash index_key_hash(Relation index, Datum value) {
    FmgrInfo *hash = index_getprocinfo(index, 1, 1);
    return KeyHash{uint64_t(DatumGetInt64(FunctionCall1Coll(hash, index->rd_indcollation[0], value))), 0};
}

// A data page for a check, pinned; it is read under a share content lock, as every core access
// method reads its pages: on a hot standby, redo of a full-page image zeroes the buffer and then
// copies the image in under an exclusive lock, so a reader with a pin alone could see zeros. The
// buffer the page was found in last time is tried first: when it still holds the page, the
// buffer mapping table is not searched.
namespace {
Buffer pin_data_page(Relation index, const IndexLayout &layout, BlockNumber block) {
    Assert(block >= 1 && block <= layout.data_pages);
    Buffer &recent = layout.recent_buffers[block - 1];
    if (recent != InvalidBuffer && ReadRecentBuffer(relation_file(index), MAIN_FORKNUM, block, recent))
        return recent;
    recent = ReadBuffer(index, block);
    return recent;
}

// The page of a pinned buffer, share-locked and checked (the buffer may hold the page read again
// from disk since, and the buffer manager takes a page of zeros for a valid one).
Page lock_data_page(Relation index, Buffer buffer) {
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    return checked_page(index, buffer);
}
}  // namespace

const uint8_t *index_locate_block(Relation index, KeyHash h, Buffer *buffer) {
    const IndexLayout &layout = index_layout(index);
    if (!layout.blocks_in_one_page()) return nullptr;
    const Parameters &p = layout.parameters;
    const uint64_t start = layout.block_start(h);
    *buffer = pin_data_page(index, layout, layout.page_of(start));
    const uint8_t *block = page_bits(BufferGetPage(*buffer)) + layout.offset_in_page(start);
    // The cache lines of the first two positions, which decide most absent keys: a hint only,
    // taken before the page is locked; the bits are read under the lock.
    const uint32_t shift = 64 - p.block_log2;
    for (uint32_t i = 0; i < Min(p.hashes, 2u); i++)
        __builtin_prefetch(block + (((h.low * position_multiplier(i)) >> shift) >> 3));
    return block;
}

bool index_block_contains(Relation index, Buffer buffer, const uint8_t *block, KeyHash h) {
    const Parameters &p = index_layout(index).parameters;
    lock_data_page(index, buffer);
    const bool present = block_contains_stopping(block, h, p.hashes, p.block_log2);
    LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
    return present;
}

bool index_contains(Relation index, KeyHash h) {
    Assert(CheckRelationLockedByMe(index, AccessShareLock, true));
    const IndexLayout &layout = index_layout(index);
    const Parameters &p = layout.parameters;
    if (layout.blocks_in_one_page()) {
        const uint64_t start = layout.block_start(h);
        Buffer buffer = pin_data_page(index, layout, layout.page_of(start));
        const bool present = block_contains_stopping(page_bits(lock_data_page(index, buffer)) +
                                                         layout.offset_in_page(start),
                                                     h, p.hashes, p.block_log2);
        UnlockReleaseBuffer(buffer);
        return present;
    }
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * p.hashes));
    const uint32_t n = key_places(layout, h, places);
    bool present = true;
    for (uint32_t first = 0; first < n && present;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        Buffer buffer = pin_data_page(index, layout, places[first].page);
        present = places_set(lock_data_page(index, buffer), places + first, end - first);
        UnlockReleaseBuffer(buffer);
        first = end;
    }
    pfree(places);
    return present;
}

void copy_index_bits(Relation index, uint8_t *bits) {
    const IndexLayout &layout = index_layout(index);
    const uint64_t bits_bytes = layout.bits_bytes();
    for (uint32_t n = 0; n < layout.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * layout.bytes_per_page;
        Buffer buffer = ReadBuffer(index, BlockNumber(1 + n));
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        memcpy(bits + begin, page_bits(checked_page(index, buffer)),
               Min(uint64_t(layout.bytes_per_page), bits_bytes - begin));
        UnlockReleaseBuffer(buffer);
    }
}

void changed_pages(Relation index, XLogRecPtr since, ChangedPageUse use, void *arg) {
    const IndexLayout &layout = index_layout(index);
    const uint64_t bits_bytes = layout.bits_bytes();
    uint8_t *copy = static_cast<uint8_t *>(palloc(layout.bytes_per_page));
    // A page with no WAL position (InvalidXLogRecPtr) counts as changed: a temporary table's
    // pages never get one, and under wal_level = minimal an index given a new file in a
    // transaction (TRUNCATE, REINDEX, VACUUM FULL) is written without WAL; when the file is
    // synced at commit rather than logged whole, its pages keep none until their next logged
    // change.
    for (uint32_t n = 0; n < layout.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * layout.bytes_per_page;
        const uint32_t length = uint32_t(Min(uint64_t(layout.bytes_per_page), bits_bytes - begin));
        Buffer buffer = ReadBuffer(index, BlockNumber(1 + n));
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = checked_page(index, buffer);
        const XLogRecPtr lsn = PageGetLSN(page);
        const bool changed = lsn > since || lsn == InvalidXLogRecPtr;
        if (changed) memcpy(copy, page_bits(page), length);
        UnlockReleaseBuffer(buffer);
        if (changed) use(arg, begin, copy, length);
    }
    pfree(copy);
}

}  // namespace bloomfilter

// Runs once per backend, when the library is loaded: besides the index's options, it times the
// ways of checking a block this CPU has (about 1 ms) and keeps the fastest (bloom_check_path()).
void bloomfilter::register_index_options() {
    index_relopt_kind = add_reloption_kind();
    add_int_reloption(index_relopt_kind, "capacity",
                      "Number of distinct keys the filter is sized for", int(kDefaultCapacity), 1,
                      PG_INT32_MAX, ShareUpdateExclusiveLock);
    add_real_reloption(index_relopt_kind, "error_rate",
                       "False-positive rate at capacity, between 0 and 1", kDefaultErrorRate, 0.0,
                       1.0, ShareUpdateExclusiveLock);
}

extern "C" Datum bloom_index_handler(PG_FUNCTION_ARGS) {
    IndexAmRoutine *am = makeNode(IndexAmRoutine);
    am->amstrategies = 0;
    am->amsupport = 1;
    am->amoptsprocnum = 0;
    am->amcanorder = false;
    am->amcanorderbyop = false;
    am->amcanbackward = false;
    am->amcanunique = false;
    am->amcanmulticol = false;
    am->amoptionalkey = false;
    am->amsearcharray = false;
    am->amsearchnulls = false;
    am->amstorage = false;
    am->amclusterable = false;
    am->ampredlocks = false;
    am->amcanparallel = false;
    am->amcaninclude = false;
    am->amusemaintenanceworkmem = false;
    am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
    am->amkeytype = InvalidOid;
    am->ambuild = bloom_am_build;
    am->ambuildempty = bloom_am_build_empty;
    am->aminsert = bloom_am_insert;
    am->ambulkdelete = bloom_am_bulk_delete;
    am->amvacuumcleanup = bloom_am_vacuum_cleanup;
    am->amcanreturn = nullptr;
    am->amcostestimate = bloom_am_cost_estimate;
    am->amoptions = bloom_am_options;
    am->amproperty = nullptr;
    am->ambuildphasename = nullptr;
    am->amvalidate = bloom_am_validate;
    am->amadjustmembers = nullptr;
    am->ambeginscan = bloom_am_begin_scan;
    am->amrescan = bloom_am_rescan;
    am->amgettuple = nullptr;
    am->amgetbitmap = nullptr;
    am->amendscan = bloom_am_end_scan;
    am->ammarkpos = nullptr;
    am->amrestrpos = nullptr;
    am->amestimateparallelscan = nullptr;
    am->aminitparallelscan = nullptr;
    am->amparallelrescan = nullptr;
    PG_RETURN_POINTER(am);
}
