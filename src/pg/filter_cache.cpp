// Reading a stored filter no more than a check needs.
//
// A filter stored out of line and uncompressed (the type's default STORAGE external) can be read
// in slices: a point lookup fetches the 36-byte header and the one block holding the key's bits,
// never the whole value. When the same stored filter is checked again within a statement (a
// batch: a join, an array, a filter from a subquery), it is read whole once and kept in fn_extra,
// keyed by its TOAST pointer, as PostGIS's lwgeom_cache.c does. An explicit flag says whether the
// cache holds a copy (MemoryContextContains cannot be used for that from PostgreSQL 16 on).
#include "glue.hpp"

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
    bool has_seen;       // a point lookup already read slices of `seen`
    ToastKey seen;
    bool has_copy;       // `copy` holds the whole of `cached`, validated
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

bool slice_contains(struct varlena *stored, const varatt_external &pointer, Hash128 h) {
    const uint64_t total_length = uint64_t(pointer.va_rawsize) - VARHDRSZ;
    struct varlena *head = detoast_attr_slice(stored, 0, int32(kHeaderBytes));
    Header header;
    Status status = read_header(bloom_bytes(head), bloom_length(head), total_length, &header);
    pfree(head);
    report_status(status, Origin::stored_value);

    const Parameters &p = header.parameters;
    const uint64_t offset = block_offset(block_index(h, p.blocks), p.block_log2);
    struct varlena *block = detoast_attr_slice(stored, int32(offset), int32(p.block_bytes()));
    if (bloom_length(block) != p.block_bytes()) report_status(Status::bad_length, Origin::stored_value);
    bool found = block_contains(bloom_bytes(block), h, p.hashes, p.block_log2);
    pfree(block);
    return found;
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

bool filter_contains(FunctionCallInfo fcinfo, Datum filter, Hash128 h) {
    struct varlena *stored = reinterpret_cast<struct varlena *>(DatumGetPointer(filter));
    Header header;
    if (VARATT_IS_EXTERNAL_ONDISK(stored)) {
        varatt_external pointer;
        VARATT_EXTERNAL_GET_POINTER(pointer, stored);
        const ToastKey key = ToastKey::of(pointer);
        FilterCache *cache = cache_of(fcinfo);
        if (cache->has_copy && cache->cached == key)
            return FilterRef::of(bloom_bytes(cache->copy), cache->header.parameters).contains(h);
        bool seen_before = cache->has_seen && cache->seen == key;
        if (!is_compressed(pointer) && !seen_before) {
            cache->has_seen = true;
            cache->seen = key;
            return slice_contains(stored, pointer, h);
        }
        // Checked twice in one statement, or compressed (no slice reads): read it whole once.
        struct varlena *whole = read_filter_cached(fcinfo, filter, &header);
        return FilterRef::of(bloom_bytes(whole), header.parameters).contains(h);
    }
    struct varlena *value = read_filter(filter, &header);
    bool found = FilterRef::of(bloom_bytes(value), header.parameters).contains(h);
    if (value != stored) pfree(value);
    return found;
}

}  // namespace bloomfilter
