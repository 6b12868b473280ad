// The TOAST slice reader (see toast_slices.hpp).
#include "toast_slices.hpp"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "storage/procarray.h"
#include "utils/fmgroids.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
}

namespace bloomfilter {

namespace {

// Where this backend last found TOAST chunks: a direct-mapped table, one entry per (value, chunk)
// hash, overwritten on collision. 4096 entries (80 kB) hold every chunk of a 1.2 MB filter
// twice over.
struct ChunkLocation {
    Oid toast_relation;  // InvalidOid: empty
    Oid value_id;
    int32 chunk;
    ItemPointerData tid;
};
constexpr uint32 kChunkLocations = 4096;
ChunkLocation chunk_locations[kChunkLocations];

ChunkLocation &location_slot(Oid toast_relation, Oid value_id, int32 chunk) {
    uint32 h = value_id * 0x9e3779b1u ^ uint32(chunk) * 0x85ebca6bu ^ toast_relation;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    return chunk_locations[h & (kChunkLocations - 1)];
}

void remember_location(const varatt_external &pointer, int32 chunk, ItemPointer tid) {
    ChunkLocation &slot = location_slot(pointer.va_toastrelid, pointer.va_valueid, chunk);
    slot.toast_relation = pointer.va_toastrelid;
    slot.value_id = pointer.va_valueid;
    slot.chunk = chunk;
    ItemPointerCopy(tid, &slot.tid);
}

// Copies the parts of the slices that lie in one TOAST chunk tuple, after checking its value id,
// number and size as PostgreSQL's own slice fetch does. Returns the chunk's number.
int32 copy_chunk(HeapTuple tuple, TupleDesc descriptor, const varatt_external &pointer,
                 Slice *slices, int count) {
    const int32 chunk_size = TOAST_MAX_CHUNK_SIZE;
    const uint64_t total = VARATT_EXTERNAL_GET_EXTSIZE(pointer);
    const int32 total_chunks = int32((total + chunk_size - 1) / chunk_size);
    bool is_null;
    Oid value_id = DatumGetObjectId(fastgetattr(tuple, 1, descriptor, &is_null));
    int32 number = DatumGetInt32(fastgetattr(tuple, 2, descriptor, &is_null));
    Pointer chunk = DatumGetPointer(fastgetattr(tuple, 3, descriptor, &is_null));
    const char *data;
    int32 size;
    if (!VARATT_IS_EXTENDED(chunk)) {
        data = VARDATA(chunk);
        size = int32(VARSIZE(chunk) - VARHDRSZ);
    } else if (VARATT_IS_SHORT(chunk)) {
        data = VARDATA_SHORT(chunk);
        size = int32(VARSIZE_SHORT(chunk) - VARHDRSZ_SHORT);
    } else {
        data = nullptr;
        size = -1;
    }
    const int32 expected = number < total_chunks - 1
                               ? chunk_size
                               : int32(total - uint64_t(total_chunks - 1) * chunk_size);
    if (value_id != pointer.va_valueid || data == nullptr || number < 0 || number >= total_chunks ||
        size != expected)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("corrupted bloom value: unexpected TOAST chunk %d of value %u",
                               number, pointer.va_valueid)));
    const uint64_t chunk_start = uint64_t(number) * chunk_size;
    for (int i = 0; i < count; i++) {
        uint64_t from = Max(chunk_start, slices[i].offset);
        uint64_t to = Min(chunk_start + uint64_t(size), slices[i].offset + slices[i].length);
        if (from < to)
            memcpy(slices[i].out + (from - slices[i].offset), data + (from - chunk_start),
                   to - from);
    }
    return number;
}

// The TOAST snapshot ignores xmax, and the index path can rely on value ids being unique among
// the index's entries; a remembered place cannot. A deleted chunk left on its page could carry
// the id of a newer value (the OID counter wraps), so a remembered tuple counts only if its
// inserter committed and nobody deleted it. Anything else goes through the index.
bool never_deleted(HeapTupleHeader header) {
    if (!(header->t_infomask & HEAP_XMAX_INVALID) &&
        TransactionIdIsValid(HeapTupleHeaderGetRawXmax(header)))
        return false;
    if (HeapTupleHeaderXminCommitted(header)) return true;  // also true when frozen
    const TransactionId xmin = HeapTupleHeaderGetRawXmin(header);
    return !TransactionIdIsCurrentTransactionId(xmin) && !TransactionIdIsInProgress(xmin) &&
           TransactionIdDidCommit(xmin);
}

// Reads the wanted chunks from the places remembered for them. False, having copied nothing that
// matters, when a place is unknown or holds anything but a visible tuple of that value and chunk:
// the caller then scans the index.
bool fetch_remembered(Relation toast, Snapshot snapshot, const varatt_external &pointer,
                      const int32 *wanted, int wanted_count, Slice *slices, int count) {
    // heap_fetch reads heap pages: a TOAST table of another access method takes the index path.
    if (toast->rd_rel->relam != HEAP_TABLE_AM_OID) return false;
    ItemPointerData tids[8];
    for (int i = 0; i < wanted_count; i++) {
        const ChunkLocation &slot =
            location_slot(pointer.va_toastrelid, pointer.va_valueid, wanted[i]);
        if (slot.toast_relation != pointer.va_toastrelid || slot.value_id != pointer.va_valueid ||
            slot.chunk != wanted[i])
            return false;
        ItemPointerCopy(&slot.tid, &tids[i]);
    }
    // A rewritten (VACUUM FULL, CLUSTER) or truncated TOAST table may be shorter than a
    // remembered block number, and reading past its end is an error, not a miss.
    const BlockNumber blocks = RelationGetNumberOfBlocks(toast);
    TupleDesc descriptor = RelationGetDescr(toast);
    for (int i = 0; i < wanted_count; i++) {
        if (ItemPointerGetBlockNumber(&tids[i]) >= blocks) return false;
        HeapTupleData tuple;
        tuple.t_self = tids[i];
        Buffer buffer;
        // keep_buf false: a tuple that is not visible leaves no pin behind.
        if (!heap_fetch(toast, snapshot, &tuple, &buffer, false)) return false;
        bool is_null;
        bool matches =
            never_deleted(tuple.t_data) &&
            DatumGetObjectId(fastgetattr(&tuple, 1, descriptor, &is_null)) == pointer.va_valueid &&
            DatumGetInt32(fastgetattr(&tuple, 2, descriptor, &is_null)) == wanted[i];
        if (matches) copy_chunk(&tuple, descriptor, pointer, slices, count);
        ReleaseBuffer(buffer);
        if (!matches) return false;
    }
    return true;
}

}  // namespace

// Copies each slice of an uncompressed out-of-line value, reading only the TOAST chunks that hold
// them (a few: the header and one 512-byte block): from where this backend last found them, or
// else in one ordered index scan (chunk_seq = ANY of their chunk numbers).
void fetch_slices(const varatt_external &pointer, Slice *slices, int count) {
    const int32 chunk_size = TOAST_MAX_CHUNK_SIZE;
    const uint64_t total = VARATT_EXTERNAL_GET_EXTSIZE(pointer);
    int32 wanted[8];
    int wanted_count = 0;
    for (int i = 0; i < count; i++) {
        if (slices[i].length == 0 || slices[i].offset + slices[i].length > total)
            report_status(Status::bad_length, Origin::stored_value);
        for (uint64_t c = slices[i].offset / chunk_size;
             c <= (slices[i].offset + slices[i].length - 1) / chunk_size; c++) {
            bool seen = false;
            for (int j = 0; j < wanted_count; j++) seen |= wanted[j] == int32(c);
            if (seen) continue;
            if (wanted_count == lengthof(wanted))
                elog(ERROR, "bloom slice fetch of more than %d TOAST chunks",
                     int(lengthof(wanted)));
            wanted[wanted_count++] = int32(c);
        }
    }

    Relation toast = table_open(pointer.va_toastrelid, AccessShareLock);
    SnapshotData snapshot_storage;
    Snapshot snapshot = toast_snapshot(&snapshot_storage);
    if (fetch_remembered(toast, snapshot, pointer, wanted, wanted_count, slices, count)) {
        table_close(toast, AccessShareLock);
        return;
    }
    Datum chunk_datums[lengthof(wanted)];
    for (int i = 0; i < wanted_count; i++) chunk_datums[i] = Int32GetDatum(wanted[i]);
    ArrayType *chunk_numbers =
        construct_array(chunk_datums, wanted_count, INT4OID, 4, true, TYPALIGN_INT);
    Relation *indexes;
    int index_count;
    int valid_index = toast_open_indexes(toast, AccessShareLock, &indexes, &index_count);
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(pointer.va_valueid));
    ScanKeyEntryInitialize(&keys[1], SK_SEARCHARRAY, 2, BTEqualStrategyNumber, InvalidOid,
                           InvalidOid, F_INT4EQ, PointerGetDatum(chunk_numbers));
    SysScanDesc scan = systable_beginscan_ordered(toast, indexes[valid_index], snapshot, 2, keys);
    TupleDesc descriptor = RelationGetDescr(toast);
    int fetched = 0;
    HeapTuple tuple;
    while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != nullptr) {
        int32 number = copy_chunk(tuple, descriptor, pointer, slices, count);
        remember_location(pointer, number, &tuple->t_self);
        fetched++;
    }
    systable_endscan_ordered(scan);
    toast_close_indexes(indexes, index_count, AccessShareLock);
    table_close(toast, AccessShareLock);
    if (fetched != wanted_count)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("corrupted bloom value: %d of %d TOAST chunks of value %u found",
                               fetched, wanted_count, pointer.va_valueid)));
    pfree(chunk_numbers);
}

}  // namespace bloomfilter
