// What differs between the PostgreSQL versions the glue is built against (15, 17 and 18), kept
// here so the other files in src/pg are written once for all of them. Included by glue.hpp
// after the server headers.
#pragma once

#if PG_VERSION_NUM < 150000
#error "bloomfilter needs PostgreSQL 15 or later"
#endif

extern "C" {
// From 16 on, the varlena and TOAST pointer macros (VARDATA, VARSIZE, varatt_external,
// VARATT_IS_EXTERNAL_ONDISK ...) live in varatt.h, which postgres.h no longer includes; other
// server headers include it only by accident.
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif
}

extern "C" {
#include "access/toast_internals.h"
}

namespace bloomfilter {
// The snapshot for reading TOAST chunks: PostgreSQL 18 returns one, earlier versions fill the
// caller's.
inline Snapshot toast_snapshot(SnapshotData *storage) {
#if PG_VERSION_NUM >= 180000
    (void)storage;
    return get_toast_snapshot();
#else
    init_toast_snapshot(storage);
    return storage;
#endif
}
}  // namespace bloomfilter
