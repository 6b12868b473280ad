// The per-statement cache of stored filters (see statement_cache.hpp).
#include "statement_cache.hpp"

namespace bloomfilter {

StatementCache *statement_cache(FunctionCallInfo fcinfo) {
    if (fcinfo->flinfo->fn_extra == nullptr)
        fcinfo->flinfo->fn_extra =
            MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(StatementCache));
    return static_cast<StatementCache *>(fcinfo->flinfo->fn_extra);
}

struct varlena *read_filter_cached(FunctionCallInfo fcinfo, Datum filter, Header *header) {
    struct varlena *stored = reinterpret_cast<struct varlena *>(DatumGetPointer(filter));
    if (!VARATT_IS_EXTERNAL_ONDISK(stored)) return read_filter(filter, header);

    varatt_external pointer;
    VARATT_EXTERNAL_GET_POINTER(pointer, stored);
    const ToastKey key = ToastKey::of(pointer);
    StatementCache *cache = statement_cache(fcinfo);
    if (cache->has_copy && cache->cached == key) {
        *header = cache->header;
        return cache->copy;
    }
    if (cache->has_copy) {
        cache->has_copy = false;
        pfree(cache->copy);
        if (cache->layers != nullptr) pfree(cache->layers);
        cache->layers = nullptr;
    }
    MemoryContext previous = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    struct varlena *copy = detoast_attr(stored);
    MemoryContextSwitchTo(previous);
    validate_or_report(bloom_bytes(copy), bloom_length(copy), Origin::stored_value, header);
    if (is_layered(*header)) {
        // Its layers' places, for every check of the statement.
        Layers *layers =
            static_cast<Layers *>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(Layers)));
        report_status(read_layers(bloom_bytes(copy), bloom_length(copy), layers),
                      Origin::stored_value);
        cache->layers = layers;
    }
    cache->copy = copy;
    cache->cached = key;
    cache->header = *header;
    cache->has_copy = true;
    return copy;
}

}  // namespace bloomfilter
