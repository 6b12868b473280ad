// Reading a stored filter no more than a check needs.
//
// A filter stored out of line and uncompressed (the type's default STORAGE external) can be read
// in slices: a point lookup fetches the 36-byte header and the one block holding the key's bits,
// never the whole value, in one scan of the TOAST index: the block's place is worked out from the
// value's length for the usual 4096-bit blocks, and checked against the header it arrives with
// (other block sizes cost a second fetch). When the same stored filter is checked again within a
// statement (a batch: a join, an array, a filter from a subquery), it is read whole once and kept
// in fn_extra, keyed by its TOAST pointer, as PostGIS's lwgeom_cache.c does. An explicit flag says
// whether the cache holds a copy (MemoryContextContains cannot be used for that from PostgreSQL 16
// on).
//
// Each backend also remembers where the TOAST chunks it read lie (their TIDs), so the next
// lookup in the same value fetches its two chunks straight from the heap, without the index
// scan, which costs more than the rest of a lookup. A remembered place is only a hint: the tuple
// found there must be visible and carry the expected value id and chunk number, or the lookup
// goes through the index as before. A value's chunks never move while it exists.
#include "glue.hpp"

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

// Identifies an on-disk TOAST value; its contents never change while it exists.
struct ToastKey {
    Oid toast_relation;
    Oid value_id;
    int32 raw_size;

    static ToastKey of(const varatt_external &pointer) {
        return ToastKey{pointer.va_toastrelid, pointer.va_valueid, pointer.va_rawsize};
    }
    bool operator==(const ToastKey &o) const {
        return toast_relation == o.toast_relation && value_id == o.value_id &&
               raw_size == o.raw_size;
    }
};

struct FilterCache {
    bool has_seen;  // a point lookup already read slices of `seen`
    ToastKey seen;
    bool has_copy;  // `copy` holds the whole of `cached`, validated
    ToastKey cached;
    struct varlena *copy;
    Header header;
};

FilterCache *cache_of(FunctionCallInfo fcinfo) {
    if (fcinfo->flinfo->fn_extra == nullptr)
        fcinfo->flinfo->fn_extra =
            MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FilterCache));
    return static_cast<FilterCache *>(fcinfo->flinfo->fn_extra);
}

// VARATT_EXTERNAL_IS_COMPRESSED, without its signed/unsigned comparison.
bool is_compressed(const varatt_external &pointer) {
    return VARATT_EXTERNAL_GET_EXTSIZE(pointer) < uint32(pointer.va_rawsize) - VARHDRSZ;
}

// A byte range of a stored value and where to copy it.
struct Slice {
    uint64_t offset;
    uint32_t length;
    uint8_t *out;
};

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

// The format version each backend last saw in a stored value, so that the block it fetches
// along with the header is the right one for filters written before version 2 too. Only a
// guess: the header fetched with the block decides, and a wrong guess costs a second fetch.
struct SeenVersion {
    Oid toast_relation;
    Oid value_id;
    uint32_t version;
};
constexpr uint32_t kSeenVersions = 256;
SeenVersion seen_versions[kSeenVersions];

SeenVersion &seen_version_of(const varatt_external &pointer) {
    return seen_versions[(pointer.va_valueid ^ pointer.va_toastrelid * 0x9e3779b9u) % kSeenVersions];
}

uint32_t guess_version(const varatt_external &pointer) {
    const SeenVersion &seen = seen_version_of(pointer);
    return seen.value_id == pointer.va_valueid && seen.toast_relation == pointer.va_toastrelid
               ? seen.version
               : kFormatVersion;
}

bool slice_contains(struct varlena *stored, const varatt_external &pointer, KeyBytes key) {
    const uint64_t total_length = VARATT_EXTERNAL_GET_EXTSIZE(pointer);
    uint8_t head[kHeaderBytes];
    uint8_t guessed_block[1u << (kMinBlockLog2 - 3)];
    // Where the key's block is if blocks are 4096 bits, as they are for up to 7 hashes.
    const uint32_t guessed_version = guess_version(pointer);
    KeyHash h = hash_bytes(guessed_version, key.data, key.length);
    const uint64_t guessed_blocks =
        total_length > kHeaderBytes ? (total_length - kHeaderBytes) >> (kMinBlockLog2 - 3) : 0;
    Slice slices[2] = {{0, uint32_t(kHeaderBytes), head}, {0, 0, guessed_block}};
    int count = 1;
    if (guessed_blocks > 0 && guessed_blocks <= UINT32_MAX) {
        slices[1].offset = block_offset(
            block_index(block_hash(h, guessed_version), uint32_t(guessed_blocks)), kMinBlockLog2);
        slices[1].length = sizeof guessed_block;
        count = 2;
    }
    fetch_slices(pointer, slices, count);
    Header header;
    report_status(read_header(head, kHeaderBytes, total_length, &header), Origin::stored_value);
    const Parameters &p = header.parameters;
    if (p.version == guessed_version) {
        if (count == 2 && p.block_log2 == kMinBlockLog2 && p.blocks == guessed_blocks)
            return block_contains(guessed_block, h, p.version, p.hashes, p.block_log2);
    } else {
        seen_version_of(pointer) = SeenVersion{pointer.va_toastrelid, pointer.va_valueid, p.version};
        h = hash_bytes(p.version, key.data, key.length);
    }

    // Larger blocks (up to 2 MB), or another version than guessed: PostgreSQL's own slice
    // fetch, now that the header says where.
    const uint64_t offset = block_offset(block_index(block_hash(h, p.version), p.blocks), p.block_log2);
    struct varlena *block = detoast_attr_slice(stored, int32(offset), int32(p.block_bytes()));
    if (bloom_length(block) != p.block_bytes())
        report_status(Status::bad_length, Origin::stored_value);
    bool found = block_contains(bloom_bytes(block), h, p.version, p.hashes, p.block_log2);
    pfree(block);
    return found;
}

bool contains_key(uint8_t *data, const Parameters &parameters, KeyBytes key) {
    FilterRef ref = FilterRef::of(data, parameters);
    return ref.contains(ref.hash(key.data, key.length));
}

}  // namespace

struct varlena *read_filter_cached(FunctionCallInfo fcinfo, Datum filter, Header *header) {
    struct varlena *stored = reinterpret_cast<struct varlena *>(DatumGetPointer(filter));
    if (!VARATT_IS_EXTERNAL_ONDISK(stored)) return read_filter(filter, header);

    varatt_external pointer;
    VARATT_EXTERNAL_GET_POINTER(pointer, stored);
    const ToastKey key = ToastKey::of(pointer);
    FilterCache *cache = cache_of(fcinfo);
    if (cache->has_copy && cache->cached == key) {
        *header = cache->header;
        return cache->copy;
    }
    if (cache->has_copy) {
        cache->has_copy = false;
        pfree(cache->copy);
    }
    MemoryContext previous = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    struct varlena *copy = detoast_attr(stored);
    MemoryContextSwitchTo(previous);
    validate_or_report(bloom_bytes(copy), bloom_length(copy), Origin::stored_value, header);
    cache->copy = copy;
    cache->cached = key;
    cache->header = *header;
    cache->has_copy = true;
    return copy;
}

bool filter_contains(FunctionCallInfo fcinfo, Datum filter, KeyBytes key) {
    struct varlena *stored = reinterpret_cast<struct varlena *>(DatumGetPointer(filter));
    Header header;
    if (VARATT_IS_EXTERNAL_ONDISK(stored)) {
        varatt_external pointer;
        VARATT_EXTERNAL_GET_POINTER(pointer, stored);
        const ToastKey toast_key = ToastKey::of(pointer);
        FilterCache *cache = cache_of(fcinfo);
        if (cache->has_copy && cache->cached == toast_key)
            return contains_key(bloom_bytes(cache->copy), cache->header.parameters, key);
        bool seen_before = cache->has_seen && cache->seen == toast_key;
        if (!is_compressed(pointer) && !seen_before) {
            cache->has_seen = true;
            cache->seen = toast_key;
            return slice_contains(stored, pointer, key);
        }
        // Checked twice in one statement, or compressed (no slice reads): read it whole once.
        struct varlena *whole = read_filter_cached(fcinfo, filter, &header);
        return contains_key(bloom_bytes(whole), header.parameters, key);
    }
    struct varlena *value = read_filter(filter, &header);
    bool found = contains_key(bloom_bytes(value), header.parameters, key);
    if (value != stored) pfree(value);
    return found;
}

}  // namespace bloomfilter
