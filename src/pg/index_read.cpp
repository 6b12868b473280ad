// bloom_index_filter and bloom_index_changes: an index's filter as a bloom value, and what
// changed in it after a WAL position; bloom_index_layers: the layers of an index that grows;
// bloom_index_info: how full an index is, and whether to rebuild or compact it.
#include "index_access.hpp"

#include <cmath>

extern "C" {
#include "access/genam.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_filter);
PG_FUNCTION_INFO_V1(bloom_index_changes);
PG_FUNCTION_INFO_V1(bloom_index_layers);
PG_FUNCTION_INFO_V1(bloom_index_info);
}

namespace {

// An index with a filter of its own (not a partitioned one) that the caller may read.
Relation open_filter_index(Oid index_oid, const char *function) {
    Relation index = open_bloomfilter_index(index_oid);
    if (index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("\"%s\" is a partitioned index, which has no filter of its own",
                               RelationGetRelationName(index)),
                        errhint("Read the index of each partition.")));
    check_may_read(index, index_check(index), function);
    return index;
}

// The layered value (format version 3) of a layered index's layers: the places of its layers.
void index_value_layers(Relation index, const IndexLayout &layout, Layers *layers) {
    const Status status = size_layers(layout.capacity, layout.error_rate, layout.expansion,
                                      layout.layer_count, layers);
    if (status == Status::too_large)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("bloomfilter index \"%s\" has grown to %u layers, more than the 1 GB "
                        "of a bloom value",
                        RelationGetRelationName(index), layout.layer_count),
                 errhint("REINDEX makes it one layer, sized for its rows.")));
    if (status != Status::ok)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("\"%s\" is not a valid bloomfilter index: its layers are not "
                               "those of a bloom value",
                               RelationGetRelationName(index)),
                        errhint("REINDEX it.")));
    for (uint32_t n = 0; n < layers->count; n++)
        Assert(layers->layer[n].blocks == layout.layers[n].parameters.blocks &&
               layers->layer[n].hashes == layout.layers[n].parameters.hashes);
}

// The value's header: a layered index's (version 3) or the one filter's (version 2), with
// `inserted` the keys the build added.
void index_value_header(const IndexLayout &layout, const Layers &layers, uint8_t *header) {
    if (layout.layout_version == kIndexLayeredVersion) {
        write_layered_header(layers, header);
    } else {
        write_header(layout.first().parameters, header);
    }
    write_inserted(header, layout.inserted_by_build);
}

struct ChangesOutput {
    ReturnSetInfo *result;
    XLogRecPtr next;
    uint64_t base;  // where the bits of the layer being read begin in the value
};

void emit_change(void *arg, uint64_t offset, const uint8_t *bytes, uint32_t length) {
    const ChangesOutput *out = static_cast<const ChangesOutput *>(arg);
    bytea *value = static_cast<bytea *>(palloc(VARHDRSZ + length));
    SET_VARSIZE(value, VARHDRSZ + length);
    memcpy(VARDATA(value), bytes, length);
    Datum values[3] = {LSNGetDatum(out->next), Int64GetDatum(int64(offset)),
                       PointerGetDatum(value)};
    bool nulls[3] = {false, false, false};
    tuplestore_putvalues(out->result->setResult, out->result->setDesc, values, nulls);
    pfree(value);
}

void emit_page_change(void *arg, uint64_t begin, const uint8_t *bytes, uint32_t length) {
    emit_change(arg, static_cast<const ChangesOutput *>(arg)->base + begin, bytes, length);
}

// Whether the metapage was written by a WAL record past `since`, or has no WAL position.
bool metapage_changed(Relation index, XLogRecPtr since) {
    Buffer buffer = ReadBuffer(index, kMetaBlock);
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    const XLogRecPtr lsn = PageGetLSN(BufferGetPage(buffer));
    UnlockReleaseBuffer(buffer);
    return lsn > since || lsn == InvalidXLogRecPtr;
}

}  // namespace

// bloom_index_changes(index, since): what changed in the index's filter after WAL position
// `since`, as rows (next_lsn, byte_offset, bytes): write `bytes` at `byte_offset` of a copy of
// the value bloom_index_filter gives to bring it up to date. The first row is always the
// value's header (offset 0; one whose first 28 bytes differ from the copy's means the index was
// rebuilt with other parameters, or, for a layered index, has another number of layers: read it
// whole again), then a layered index's layer 0 header, and next_lsn, the same on every row, is the
// `since` of the next call. It is taken before the layers are counted and the pages read, so a
// change made meanwhile is returned now or next time, and a layer published meanwhile shows in the
// next call's header.
extern "C" Datum bloom_index_changes(PG_FUNCTION_ARGS) {
    const XLogRecPtr since = PG_GETARG_LSN(1);
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_changes");
    ChangesOutput out;
    out.next = RecoveryInProgress() ? GetXLogReplayRecPtr(nullptr) : GetXLogInsertRecPtr();
    InitMaterializedSRF(fcinfo, 0);
    out.result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    // A copy: reading the pages must not reload the relcache entry under it.
    const IndexLayout layout = current_index_layout(index);
    const bool layered = layout.layout_version == kIndexLayeredVersion;
    Layers layers;
    if (layered) index_value_layers(index, layout, &layers);
    uint8_t header[kHeaderBytes];
    index_value_header(layout, layers, header);
    emit_change(&out, 0, header, kHeaderBytes);
    // Layer 0's header holds the build's keys too (bloom_index_filter): a copy made before a
    // REINDEX that kept the parameters has the old count there. It is on the metapage, returned
    // when the metapage changed after `since` (or has no WAL position, as changed_pages).
    if (layered && metapage_changed(index, since)) {
        uint8_t first[kHeaderBytes];
        write_header(layout.first().parameters, first);
        write_inserted(first, layout.inserted_by_build);
        emit_change(&out, layers.offset[0], first, kHeaderBytes);
    }
    for (uint32_t n = 0; n < layout.layer_count; n++) {
        out.base = (layered ? layers.offset[n] : 0) + kHeaderBytes;
        changed_pages(index, layout.layers[n], layered, since, emit_page_change, &out);
    }
    index_close(index, NoLock);
    return (Datum)0;
}

// bloom_index_filter(index): the index's filter as a bloom value, so every bloom function and
// any reader of the format can use it: of an index of fixed size, one filter (format version
// 2); of a layered index, its layers (format version 3, docs/format.md), each read under its
// pages' share locks. `inserted` counts the keys the build added.
extern "C" Datum bloom_index_filter(PG_FUNCTION_ARGS) {
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_filter");
    const IndexLayout layout = current_index_layout(index);
    struct varlena *result;
    if (layout.layout_version == kIndexLayeredVersion) {
        Layers layers;
        index_value_layers(index, layout, &layers);
        const Size size = VARHDRSZ + layers.encoded_bytes;
        result = static_cast<struct varlena *>(palloc(size));
        SET_VARSIZE(result, size);
        uint8_t *bytes = bloom_bytes(result);
        write_layered_headers(layers, bytes);
        write_inserted(bytes, layout.inserted_by_build);
        write_inserted(bytes + layers.offset[0], layout.inserted_by_build);
        for (uint32_t n = 0; n < layers.count; n++)
            copy_index_bits(index, layout.layers[n], true, bytes + layers.offset[n] + kHeaderBytes);
    } else {
        result = make_filter(layout.first().parameters);
        write_inserted(bloom_bytes(result), layout.inserted_by_build);
        copy_index_bits(index, layout.first(), false, bloom_bytes(result) + kHeaderBytes);
    }
    index_close(index, NoLock);
    PG_RETURN_POINTER(result);
}

// bloom_index_layers(index): the index's layers (one for an index of fixed size): each one's
// capacity, error rate, size, the keys the build added to it, its first block and pages, the
// pages past its fill at capacity, its bits set and the error rate estimated from them.
extern "C" Datum bloom_index_layers(PG_FUNCTION_ARGS) {
    Relation index = open_bloomfilter_index(PG_GETARG_OID(0));
    if (index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("\"%s\" is a partitioned index, which has no filter of its own",
                               RelationGetRelationName(index)),
                        errhint("Read the index of each partition.")));
    check_may_read(index, index_check(index), "bloom_index_layers");
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    // A copy: reading the pages below must not reload the relcache entry under it.
    const IndexLayout layout = current_index_layout(index);
    const bool layered = layout.layout_version == kIndexLayeredVersion;
    // The full pages are counted on the metapage of a layered index.
    uint32_t full_pages[kMaxLayers] = {0};
    if (layered) {
        Buffer buffer = ReadBuffer(index, kMetaBlock);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        const IndexMetaLayered *meta =
            reinterpret_cast<const IndexMetaLayered *>(PageGetContents(BufferGetPage(buffer)));
        for (uint32_t n = 0; n < layout.layer_count; n++)
            full_pages[n] = meta->layers[n].full_pages;
        UnlockReleaseBuffer(buffer);
    }
    for (uint32_t n = 0; n < layout.layer_count; n++) {
        const FilterPages &layer = layout.layers[n];
        const Statistics stats = filter_statistics(index, layer, layered);
        Datum values[10] = {Int32GetDatum(int32(n)),
                            Int64GetDatum(int64(layer.parameters.capacity)),
                            Float8GetDatum(layer.parameters.error_rate),
                            Int64GetDatum(int64(layer.parameters.encoded_bytes())),
                            Int64GetDatum(n == 0 ? int64(layout.inserted_by_build) : 0),
                            Int64GetDatum(int64(layer.first_block)),
                            Int64GetDatum(int64(layer.data_pages)),
                            Int64GetDatum(int64(full_pages[n])),
                            Float8GetDatum(stats.fill),
                            Float8GetDatum(stats.estimated_error_rate)};
        bool nulls[10] = {false};
        nulls[7] = !layered;
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    index_close(index, NoLock);
    return (Datum)0;
}

namespace {

// 2.1's needs_rebuild for a filter of fixed size: its estimated rate past 1.05 x its error rate,
// or more keys than its capacity by more than the count estimate's own error (its bias, about
// +0.02% of the keys, and four standard deviations of the estimator at capacity keys, m/k^2
// (e^x - 1 - x), x = k n / m), so that a filter just built at its capacity does not say it.
bool fixed_needs_rebuild(const Parameters &p, const Statistics &stats) {
    const double bits = double(p.bits()), k = double(p.hashes), n = double(p.capacity);
    const double x = k * n / bits;
    return stats.estimated_error_rate > 1.05 * p.error_rate ||
           stats.estimated_count > 1.001 * n + 4 * sqrt((bits / (k * k)) * ((exp(x) - 1) - x));
}

}  // namespace

// bloom_index_info(index): the columns of bloom_info for the index's filter, then `layers` and
// `advice`. An index of fixed size: its filter's, `needs_rebuild` when its rate or its keys are
// past what it was built for (advice 'rebuild': a larger capacity, or expansion). A layered
// index: its layers' capacities, bits, bits set and estimated counts summed, the rate of a key
// absent from every layer (as bloom_info of its layered value, without making that value, which
// may be too large for one), `needs_rebuild` when that rate is past 1.05 x error_rate, and
// advice 'compact' when it has more than one layer: a check reads a page per layer, and REINDEX
// makes one, sized for the rows. `keys_beyond_rows`: the keys the filter holds (its estimated
// count) past the index's rows as VACUUM last counted them (pg_class.reltuples), which a rebuild
// drops; 'compact' too when a REINDEX would make a layered index half its size or less.
extern "C" Datum bloom_index_info(PG_FUNCTION_ARGS) {
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_info");
    // A copy: reading the pages must not reload the relcache entry under it.
    const IndexLayout layout = current_index_layout(index);
    const bool layered = layout.layout_version == kIndexLayeredVersion;
    uint64_t capacity = 0, bits = 0, bytes = kHeaderBytes, bits_set = 0;
    double estimated_count = 0, absent = 1, error_rate, estimated_error_rate = 0;
    bool needs_rebuild = false;
    for (uint32_t n = 0; n < layout.layer_count; n++) {
        const FilterPages &layer = layout.layers[n];
        const Statistics stats = filter_statistics(index, layer, layered);
        capacity += layer.parameters.capacity;
        bits += layer.parameters.bits();
        bytes += layered ? layer.parameters.encoded_bytes() : layer.bits_bytes();
        bits_set += stats.bits_set;
        estimated_count += stats.estimated_count;
        absent *= 1 - stats.estimated_error_rate;
        if (!layered) {
            estimated_error_rate = stats.estimated_error_rate;
            needs_rebuild = fixed_needs_rebuild(layer.parameters, stats);
        }
    }
    if (layered) {
        error_rate = layout.error_rate;
        estimated_error_rate = 1 - absent;
        needs_rebuild = estimated_error_rate > 1.05 * error_rate;
    } else {
        error_rate = layout.first().parameters.error_rate;
    }
    // Rows as VACUUM (or the build) counted them: unknown before either.
    const double rows = double(index->rd_rel->reltuples);
    const bool rows_known = rows >= 0;
    const double beyond = rows_known ? Max(0.0, estimated_count - rows) : 0;
    const bool shrinks = layered && rows_known &&
                         double(capacity) >= 2.0 * double(first_layer_capacity(build_options(index),
                                                                               uint64_t(rows)));
    const char *advice = needs_rebuild                                       ? "rebuild"
                         : layout.layer_count > 1 || (beyond > 0 && shrinks) ? "compact"
                                                                             : nullptr;
    index_close(index, NoLock);

    TupleDesc descriptor;
    if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_info must be called in a context that accepts a "
                               "record")));
    descriptor = BlessTupleDesc(descriptor);
    const int64 max = PG_INT64_MAX;
    Datum values[14] = {
        Int64GetDatum(capacity > uint64_t(max) ? max : int64(capacity)),
        Float8GetDatum(error_rate),
        Int64GetDatum(int64(bits)),
        // A layered index: layer 0's (each layer has its own number of hashes).
        Int32GetDatum(int32(layout.first().parameters.hashes)),
        Int64GetDatum(int64(VARHDRSZ + bytes)),
        Int64GetDatum(layout.inserted_by_build > uint64_t(max) ? max
                                                               : int64(layout.inserted_by_build)),
        Int64GetDatum(int64(bits_set)),
        Float8GetDatum(double(bits_set) / double(bits)),
        Float8GetDatum(estimated_count),
        Float8GetDatum(estimated_error_rate),
        BoolGetDatum(needs_rebuild),
        Int32GetDatum(int32(layout.layer_count)),
        advice != nullptr ? CStringGetTextDatum(advice) : Datum(0),
        Int64GetDatum(beyond >= double(max) ? max : int64(llround(beyond))),
    };
    bool nulls[14] = {false};
    nulls[12] = advice == nullptr;
    nulls[13] = !rows_known;
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(descriptor, values, nulls)));
}
