// The per-statement state of a function that checks stored filters, kept in fn_extra: which
// stored value a point lookup already read slices of, and the whole copy of one that is checked
// again within the statement (a batch: a join, an array, a filter from a subquery), keyed by its
// TOAST pointer, as PostGIS's lwgeom_cache.c does. An explicit flag says whether it holds a copy
// (MemoryContextContains cannot be used for that from PostgreSQL 16 on).
#pragma once

#include "toast_slices.hpp"

namespace bloomfilter {

struct StatementCache {
    bool has_seen;  // a point lookup already read slices of `seen`
    ToastKey seen;
    bool has_copy;  // `copy` holds the whole of `cached`, validated
    ToastKey cached;
    struct varlena *copy;
    Header header;
    Layers *layers;  // of a layered copy (format version 3), read once; else null
};

// The function's cache, made on its first call in the statement.
StatementCache *statement_cache(FunctionCallInfo fcinfo);

}  // namespace bloomfilter
