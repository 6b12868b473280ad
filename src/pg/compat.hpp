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
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
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

// search_path = pg_catalog, pg_temp in the GUC nest level the caller opened, for another role's
// code run on the caller's behalf: RestrictSearchPath from 17 on (as maintenance commands do);
// before, the same setting, or the caller's schemas would come first in that code's lookups.
inline void restrict_search_path() {
#if PG_VERSION_NUM >= 170000
    RestrictSearchPath();
#else
    set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                      GUC_ACTION_SAVE, true, 0, false);
#endif
}

// This backend's local transaction id: in MyProc->vxid from 17 on.
inline LocalTransactionId local_transaction_id() {
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// A role's privilege on a schema: object_aclcheck from 16 on.
inline AclResult schema_aclcheck(Oid schema, Oid role, AclMode mode) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(NamespaceRelationId, schema, role, mode);
#else
    return pg_namespace_aclcheck(schema, role, mode);
#endif
}

// A role's privilege on a function: object_aclcheck from 16 on.
inline AclResult function_aclcheck(Oid function, Oid role, AclMode mode) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, role, mode);
#else
    return pg_proc_aclcheck(function, role, mode);
#endif
}

// The search_path as it is now, and whether it still is (for a name resolved under it): a
// SearchPathMatcher from 17 on, an OverrideSearchPath before.
#if PG_VERSION_NUM >= 170000
using SearchPathSnapshot = SearchPathMatcher;
inline SearchPathSnapshot *search_path_now(MemoryContext context) {
    return GetSearchPathMatcher(context);
}
inline bool search_path_unchanged(SearchPathSnapshot *path) {
    return SearchPathMatchesCurrentEnvironment(path);
}
#else
using SearchPathSnapshot = OverrideSearchPath;
inline SearchPathSnapshot *search_path_now(MemoryContext context) {
    return GetOverrideSearchPath(context);
}
inline bool search_path_unchanged(SearchPathSnapshot *path) {
    return OverrideSearchPathMatchesCurrent(path);
}
#endif

// expression_tree_walker with a typed walker: PostgreSQL 15 declares the walker `bool (*)()`.
using ExpressionWalker = bool (*)(Node *, void *);
inline bool walk_expression(Node *node, ExpressionWalker walker, void *context) {
#if PG_VERSION_NUM >= 160000
    return expression_tree_walker(node, walker, context);
#else
    // Through void (*)(), the generic function pointer type GCC casts without a warning.
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)), context);
#endif
}
// The memory a HashAggregate counts against its limit (nodeAgg.c's hash_agg_update_metrics,
// without the spill partitions' buffers, which its limit leaves out): its table and the groups'
// keys and states; PostgreSQL 18 keeps the table's entries in a context of their own.
inline size_t hash_aggregate_memory(AggState *node) {
    size_t bytes = MemoryContextMemAllocated(node->hash_metacxt, true) +
                   MemoryContextMemAllocated(node->hashcontext->ecxt_per_tuple_memory, true);
#if PG_VERSION_NUM >= 180000
    bytes += MemoryContextMemAllocated(node->hash_tablecxt, true);
#endif
    return bytes;
}
}  // namespace bloomfilter
