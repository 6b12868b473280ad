// bloom_index_filter and bloom_index_changes: an index's filter as a bloom value, and what
// changed in it after a WAL position.
#include "index_access.hpp"

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
    write_header(layout.parameters, header);
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
    struct varlena *result = make_filter(layout.parameters);
    write_inserted(bloom_bytes(result), layout.inserted_by_build);
    copy_index_bits(index, bloom_bytes(result) + kHeaderBytes);
    index_close(index, NoLock);
    PG_RETURN_POINTER(result);
}
