// bloom_index_filter and bloom_index_changes: an index's filter as a bloom value, and what
// changed in it after a WAL position; bloom_index_layers: the layers of an index that grows.
#include "index_access.hpp"

#include <cmath>

extern "C" {
#include "access/genam.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "funcapi.h"
#include "utils/pg_lsn.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_filter);
PG_FUNCTION_INFO_V1(bloom_index_changes);
PG_FUNCTION_INFO_V1(bloom_index_layers);
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
    const IndexLayout &layout = current_index_layout(index);
    if (layout.layout_version == kIndexLayeredVersion && layout.layer_count > 1)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("bloomfilter index \"%s\" has grown to %u layers, which %s cannot read "
                        "as one filter",
                        RelationGetRelationName(index), layout.layer_count, function),
                 errhint("bloom_index_layers() describes them; REINDEX makes the index one "
                         "layer again.")));
    return index;
}

struct ChangesOutput {
    ReturnSetInfo *result;
    XLogRecPtr next;
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
    emit_change(arg, kHeaderBytes + begin, bytes, length);
}

}  // namespace

// bloom_index_changes(index, since): what changed in the index's filter after WAL position
// `since`, as rows (next_lsn, byte_offset, bytes): write `bytes` at `byte_offset` of a copy of
// the filter's byte format to bring it up to date. The first row is always the header (offset
// 0; parameters that differ from the copy's mean the index was rebuilt: read it whole again),
// and next_lsn, the same on every row, is the `since` of the next call. It is taken before the
// pages are read, so a change made while they are read is returned now or next time, never
// lost.
extern "C" Datum bloom_index_changes(PG_FUNCTION_ARGS) {
    const XLogRecPtr since = PG_GETARG_LSN(1);
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_changes");
    ChangesOutput out;
    out.next = RecoveryInProgress() ? GetXLogReplayRecPtr(nullptr) : GetXLogInsertRecPtr();
    InitMaterializedSRF(fcinfo, 0);
    out.result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    const IndexLayout &layout = index_layout(index);
    uint8_t header[kHeaderBytes];
    write_header(layout.first().parameters, header);
    write_inserted(header, layout.inserted_by_build);
    emit_change(&out, 0, header, kHeaderBytes);
    changed_pages(index, since, emit_page_change, &out);
    index_close(index, NoLock);
    return (Datum)0;
}

// bloom_index_filter(index): the index's filter as a bloom value, the same byte format as the
// type's (format version 2), so every bloom function and any reader of the format can use it.
// `inserted` counts the keys the build added.
extern "C" Datum bloom_index_filter(PG_FUNCTION_ARGS) {
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_filter");
    const IndexLayout &layout = index_layout(index);
    struct varlena *result = make_filter(layout.first().parameters);
    write_inserted(bloom_bytes(result), layout.inserted_by_build);
    copy_index_bits(index, bloom_bytes(result) + kHeaderBytes);
    index_close(index, NoLock);
    PG_RETURN_POINTER(result);
}

namespace {

// A layer's pages' bits counted: the bits set and the layer's error rate estimated from them
// (the mean over its blocks of fill^k, as bloom_info estimates a filter's).
void layer_bits(Relation index, const FilterPages &layer, bool layered, uint64_t *set,
                double *error_rate) {
    uint8_t *bits = static_cast<uint8_t *>(palloc(layer.bytes_per_page));
    const uint64_t bits_bytes = layer.bits_bytes();
    const Parameters &p = layer.parameters;
    const uint64_t block_bytes = p.block_bytes();
    double error_sum = 0;
    *set = 0;
    for (uint32_t n = 0; n < layer.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * layer.bytes_per_page;
        const uint32_t length = uint32_t(Min(uint64_t(layer.bytes_per_page), bits_bytes - begin));
        Buffer buffer = ReadBuffer(index, layer.first_block + n);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = BufferGetPage(buffer);
        const bool empty = PageIsNew(page);
        if (!empty) memcpy(bits, page_bits(page), length);
        UnlockReleaseBuffer(buffer);
        if (empty) continue;
        for (uint64_t b = 0; b + block_bytes <= length; b += block_bytes) {
            uint64_t block_set = 0;
            for (uint64_t i = 0; i < block_bytes; i++)
                block_set += uint64_t(__builtin_popcount(bits[b + i]));
            *set += block_set;
            error_sum += pow(double(block_set) / double(8 * block_bytes), double(p.hashes));
        }
    }
    *error_rate = error_sum / p.blocks;
    pfree(bits);
}

}  // namespace

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
        uint64_t set;
        double estimated;
        layer_bits(index, layer, layered, &set, &estimated);
        Datum values[10] = {Int32GetDatum(int32(n)),
                            Int64GetDatum(int64(layer.parameters.capacity)),
                            Float8GetDatum(layer.parameters.error_rate),
                            Int64GetDatum(int64(layer.parameters.encoded_bytes())),
                            Int64GetDatum(n == 0 ? int64(layout.inserted_by_build) : 0),
                            Int64GetDatum(int64(layer.first_block)),
                            Int64GetDatum(int64(layer.data_pages)),
                            Int64GetDatum(int64(full_pages[n])),
                            Float8GetDatum(double(set) / double(layer.parameters.bits())),
                            Float8GetDatum(estimated)};
        bool nulls[10] = {false};
        nulls[7] = !layered;
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    index_close(index, NoLock);
    return (Datum)0;
}
