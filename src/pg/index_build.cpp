// The build of a bloomfilter index (ambuild), within maintenance_work_mem. A filter that fits
// is made whole in memory while the table is scanned, then written page by page. A larger one is
// built from the keys' hashes sorted (tuplesort, which spills past maintenance_work_mem as
// CREATE INDEX of a btree does): a version 2 key's block is its hash times the number of blocks,
// shifted, so hashes in increasing order fill the filter's blocks, and pages, in order. A slice
// of a few pages is filled in memory at a time and written, each page once, sequentially. Both
// give the same bytes: a filter's bits do not depend on the order of its keys.
#include "index_pages.hpp"

#include <cmath>

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "storage/lmgr.h"
#include "utils/tuplesort.h"
}

namespace bloomfilter {

namespace {

// Whether this database's bloomfilter extension is still at a version before 2.2, whose indexes
// all had a fixed size: until ALTER EXTENSION UPDATE (whose script gives each of them
// expansion = 0), an index without `expansion` is built with a fixed size, as 2.1 built it, even
// by this library.
bool extension_before_growth() {
    const Oid extension = get_extension_oid("bloomfilter", true);
    if (!OidIsValid(extension)) return false;
    Relation catalog = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(extension));
    SysScanDesc scan = systable_beginscan(catalog, ExtensionOidIndexId, true, nullptr, 1, &key);
    const HeapTuple tuple = systable_getnext(scan);
    bool before = false;
    if (HeapTupleIsValid(tuple)) {
        bool is_null;
        const Datum version =
            heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(catalog), &is_null);
        if (!is_null) {
            const char *v = text_to_cstring(DatumGetTextPP(version));
            static const char *const kOlder[] = {"1.0", "1.1", "1.2", "1.3", "1.4", "2.0", "2.1"};
            for (const char *old : kOlder) before = before || strcmp(v, old) == 0;
        }
    }
    systable_endscan(scan);
    table_close(catalog, AccessShareLock);
    return before;
}

}  // namespace

BuildOptions build_options(Relation index) {
    const IndexOptions *options = reinterpret_cast<const IndexOptions *>(index->rd_options);
    BuildOptions build;
    build.capacity = options && options->capacity > 0 ? options->capacity : 0;
    build.error_rate = options ? options->error_rate : kDefaultErrorRate;
    if (options && options->expansion >= 0) {
        build.expansion = uint32_t(options->expansion);
        return build;
    }
    // Not given: layers, unless the extension is older or a layer's blocks would not fit in a
    // page (an error_rate so small that a key's bits take more than a page: see
    // check_layer_blocks), where a fixed size is what the index can have.
    Parameters layer;
    build.expansion = !extension_before_growth() &&
                              layer_parameters(uint64_t(kDefaultCapacity), build.error_rate,
                                               kDefaultExpansion, 0, &layer) == Status::ok &&
                              layer.block_bytes() <= bytes_per_page_for(layer)
                          ? kDefaultExpansion
                          : 0;
    return build;
}

Parameters index_parameters(const BuildOptions &options) {
    // Without a capacity, a fixed size is for the 2.1 default, and a layered index's layer 0 is
    // sized from the rows once they are counted (here, for the smallest it can be).
    const int64 capacity = options.capacity > 0    ? options.capacity
                           : options.expansion > 0 ? kMinimumCapacity
                                                   : kDefaultCapacity;
    Parameters parameters;
    // Layer 0 of a layered index: at its layer's rate (see layer_error_rate).
    report_parameters(size_filter(uint64_t(capacity),
                                  options.expansion > 0 ? layer_error_rate(options.error_rate, 0)
                                                        : options.error_rate,
                                  &parameters),
                      capacity, options.error_rate);
    parameters.version = kFormatVersion2;
    return parameters;
}

// Twice the keys: room to grow before a layer is added (a rebuild by pg_restore, REINDEX,
// VACUUM FULL or CLUSTER of a table past its capacity would otherwise add a layer twice its size
// at the next writes).
uint64_t first_layer_capacity(const BuildOptions &options, uint64_t keys) {
    const uint64_t least = options.capacity > 0 ? uint64_t(options.capacity) : kMinimumCapacity;
    return Max(least, 2 * keys);
}

namespace {

void init_page(Page page, uint16_t flags) {
    PageInit(page, BLCKSZ, sizeof(IndexPageOpaque));
    IndexPageOpaque *opaque = page_opaque(page);
    opaque->flags = flags;
    opaque->page_id = kIndexPageId;
}

uint32_t data_pages_for(const Parameters &parameters) {
    const uint64_t bits_bytes = parameters.encoded_bytes() - kHeaderBytes;
    const uint32_t bytes_per_page = bytes_per_page_for(parameters);
    return uint32_t((bits_bytes + bytes_per_page - 1) / bytes_per_page);
}

// Block 0, logged whole. `header`: the byte format's header, its count of keys `inserted`. A
// layered index's (expansion > 0) has its layer 0, for `capacity` keys.
void write_meta_page(Relation index, const BuildOptions &options, const uint8_t *header,
                     const Parameters &parameters, uint64_t inserted, uint64_t capacity) {
    Buffer buffer = extend_index(index);
    if (BufferGetBlockNumber(buffer) != kMetaBlock)
        elog(ERROR, "bloomfilter index \"%s\" is not empty", RelationGetRelationName(index));
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, GENERIC_XLOG_FULL_IMAGE);
    init_page(page, kMetaPageFlag);
    size_t meta_bytes;
    if (options.expansion > 0) {
        IndexMetaLayered meta{};
        meta.magic = kIndexMagic;
        meta.layout_version = kIndexLayeredVersion;
        meta.layer_count = 1;
        meta.expansion = options.expansion;
        meta.capacity = capacity;
        meta.error_rate = options.error_rate;
        memcpy(meta.layers[0].header, header, kHeaderBytes);
        write_inserted(meta.layers[0].header, inserted);
        meta.layers[0].first_block = kMetaBlock + 1;
        meta.layers[0].data_pages = data_pages_for(parameters);
        memcpy(PageGetContents(page), &meta, sizeof meta);
        meta_bytes = sizeof meta;
    } else {
        IndexMeta meta{};
        meta.magic = kIndexMagic;
        meta.layout_version = kIndexLayoutVersion;
        meta.bytes_per_page = bytes_per_page_for(parameters);
        meta.data_pages = data_pages_for(parameters);
        memcpy(meta.header, header, kHeaderBytes);
        write_inserted(meta.header, inserted);
        memcpy(PageGetContents(page), &meta, sizeof meta);
        meta_bytes = sizeof meta;
    }
    reinterpret_cast<PageHeader>(page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + meta_bytes;
    GenericXLogFinish(xlog);
    UnlockReleaseBuffer(buffer);
}

// The next data page, holding `length` bytes of the filter's bits, logged whole. A layered
// index's page has the count of its bits set after its bytes_per_page.
void write_data_page(Relation index, const uint8_t *bits, uint32_t length, uint32_t bytes_per_page,
                     bool layered) {
    CHECK_FOR_INTERRUPTS();
    Buffer buffer = extend_index(index);
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, GENERIC_XLOG_FULL_IMAGE);
    init_page(page, 0);
    memcpy(page_bits(page), bits, length);
    reinterpret_cast<PageHeader>(page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + length;
    if (layered) {
        store_u32(page_bits(page) + bytes_per_page, uint32_t(count_bits(bits, length)));
        reinterpret_cast<PageHeader>(page)->pd_lower = layer_page_lower(bytes_per_page);
    }
    GenericXLogFinish(xlog);
    UnlockReleaseBuffer(buffer);
}

// Writes the next data pages, with `length` bytes of the filter's bits held at `bits`: whole
// pages (but for the filter's last one).
void write_data_pages(Relation index, const Parameters &parameters, const uint8_t *bits,
                      uint64_t length, bool layered) {
    const uint32_t bytes_per_page = bytes_per_page_for(parameters);
    for (uint64_t offset = 0; offset < length; offset += bytes_per_page)
        write_data_page(index, bits + offset,
                        uint32_t(Min(uint64_t(bytes_per_page), length - offset)), bytes_per_page,
                        layered);
}

// A layer's key lies in one page.
void check_layer_blocks(const Parameters &parameters) {
    if (parameters.block_bytes() > bytes_per_page_for(parameters))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a bloomfilter index with expansion cannot have blocks larger than a page"),
                 errhint("Use a larger error_rate, or expansion = 0.")));
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
    KeyHash h;
    if (!index_row_hash(index, values, isnull, &h)) return;
    state->filter.add(h);
    state->inserted++;
}

// The whole filter in memory first: the build sets bits all over it, and each page is then
// written once.
void build_in_memory(Relation heap, Relation index, IndexInfo *index_info,
                     const BuildOptions &options, const Parameters &parameters,
                     IndexBuildResult *result) {
    struct varlena *filter = make_filter(parameters);
    BuildState state{index, FilterRef::of(bloom_bytes(filter), parameters), 0, 0};
    table_index_build_scan(heap, index, index_info, true, true, build_callback, &state, nullptr);
    const uint8_t *bytes = bloom_bytes(filter);
    write_meta_page(index, options, bytes, parameters, state.inserted, parameters.capacity);
    write_data_pages(index, parameters, bytes + kHeaderBytes,
                     parameters.encoded_bytes() - kHeaderBytes, false);
    pfree(filter);
    result->heap_tuples = state.tuples;
    result->index_tuples = double(state.inserted);
}

// An int8 sort orders signed values: the sign bit flipped, it orders the hashes unsigned.
constexpr uint64_t kSignBit = uint64_t(1) << 63;

struct SortedBuildState {
    Tuplesortstate *sort;
    uint64_t inserted;
    double tuples;
};

void sorted_build_callback(Relation index, ItemPointer, Datum *values, bool *isnull, bool,
                           void *arg) {
    SortedBuildState *state = static_cast<SortedBuildState *>(arg);
    state->tuples += 1;
    KeyHash key;
    if (!index_row_hash(index, values, isnull, &key)) return;
    const uint64_t h = key.low;
    tuplesort_putdatum(state->sort, Int64GetDatum(int64(h ^ kSignBit)), false);
    state->inserted++;
}

bool next_sorted_hash(Tuplesortstate *sort, uint64_t *h) {
    Datum value;
    bool is_null;
#if PG_VERSION_NUM >= 160000
    if (!tuplesort_getdatum(sort, true, false, &value, &is_null, nullptr)) return false;
#else
    if (!tuplesort_getdatum(sort, true, &value, &is_null, nullptr)) return false;
#endif
    *h = uint64_t(DatumGetInt64(value)) ^ kSignBit;
    return true;
}

// A slice of the filter filled at a time: whole pages and whole blocks, about 1 MB (at most a
// sixteenth of maintenance_work_mem, at least one page or block).
uint64_t slice_bytes_for(const Parameters &parameters) {
    const uint64_t unit = Max(uint64_t(bytes_per_page_for(parameters)), parameters.block_bytes());
    const uint64_t wanted = Min(uint64_t(1) << 20, uint64_t(maintenance_work_mem) * 1024 / 16);
    return Max(uint64_t(1), wanted / unit) * unit;
}

void build_sorted(Relation heap, Relation index, IndexInfo *index_info, const BuildOptions &options,
                  Parameters parameters, IndexBuildResult *result) {
    const bool layered = options.expansion > 0;
    SortedBuildState state{tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid, false,
                                                 maintenance_work_mem, nullptr, TUPLESORT_NONE),
                           0, 0};
    table_index_build_scan(heap, index, index_info, true, true, sorted_build_callback, &state,
                           nullptr);
    tuplesort_performsort(state.sort);

    uint64_t capacity = parameters.capacity;
    if (layered) {
        capacity = first_layer_capacity(options, state.inserted);
        // Without room for twice the rows (past the largest filter), room for the rows.
        if (layer_parameters(capacity, options.error_rate, options.expansion, 0, &parameters) !=
                Status::ok &&
            capacity > state.inserted)
            capacity = Max(state.inserted, uint64_t(options.capacity));
        if (layer_parameters(capacity, options.error_rate, options.expansion, 0, &parameters) !=
            Status::ok)
            report_parameters(Status::capacity_out_of_range, int64(capacity), options.error_rate);
        check_layer_blocks(parameters);
    }
    uint8_t header[kHeaderBytes];
    write_header(parameters, header);
    write_meta_page(index, options, header, parameters, state.inserted, capacity);

    const uint64_t bits_bytes = parameters.encoded_bytes() - kHeaderBytes;
    const uint64_t slice_bytes = slice_bytes_for(parameters);
    uint8_t *slice = static_cast<uint8_t *>(palloc_extended(slice_bytes, MCXT_ALLOC_HUGE));
    uint64_t h = 0;
    bool have = next_sorted_hash(state.sort, &h);
    for (uint64_t begin = 0; begin < bits_bytes; begin += slice_bytes) {
        const uint64_t length = Min(slice_bytes, bits_bytes - begin);
        memset(slice, 0, length);
        // The hashes of the keys whose block lies in this slice.
        for (; have; have = next_sorted_hash(state.sort, &h)) {
            const KeyHash key{h, 0};
            const uint64_t block = key_block_offset(key, parameters) - kHeaderBytes;
            if (block >= begin + length) break;
            Assert(block >= begin);
            block_add(slice + (block - begin), key, parameters.version, parameters.hashes,
                      parameters.block_log2);
        }
        write_data_pages(index, parameters, slice, length, layered);
    }
    Assert(!have);
    pfree(slice);
    tuplesort_end(state.sort);
    result->heap_tuples = state.tuples;
    result->index_tuples = double(state.inserted);
}

}  // namespace

IndexBuildResult *bloom_am_build(Relation heap, Relation index, IndexInfo *index_info) {
    if (RelationGetNumberOfBlocks(index) != 0)
        elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
    check_key_columns(index);
    const BuildOptions options = build_options(index);
    const Parameters parameters = index_parameters(options);
    const bool layered = options.expansion > 0;
    // Before the table is read; again once the first layer is sized.
    if (layered) check_layer_blocks(parameters);
    IndexBuildResult *result = static_cast<IndexBuildResult *>(palloc0(sizeof(IndexBuildResult)));
    if (!layered && parameters.encoded_bytes() <= uint64_t(maintenance_work_mem) * 1024)
        build_in_memory(heap, index, index_info, options, parameters, result);
    else
        build_sorted(heap, index, index_info, options, parameters, result);
    return result;
}

}  // namespace bloomfilter
